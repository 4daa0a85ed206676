package callerctx

import (
	"context"
	"testing"
	"time"
)

// Bound reads the deadline of a bound set over a held context, and never
// a caller's own: a caller's context, held or not, and one detached by
// WithoutCancel report none, as does a context over a held one whose
// Deadline panics (read as Deadline reads it: none, no panic).
func TestBoundIsTheStoresOwnNeverTheCallers(t *testing.T) {
	callers, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	held := Of(callers)
	own, cancelOwn := context.WithTimeout(held, 2*time.Minute)
	defer cancelOwn()
	ownDeadline, _ := own.Deadline()
	for _, tc := range []struct {
		name string
		ctx  context.Context
		want time.Time // zero: none
	}{
		{"a caller's", callers, time.Time{}},
		{"a caller's, held", held, time.Time{}},
		{"a bound over a held caller's", own, ownDeadline},
		{"a bound over a held caller's, held again", Of(own), time.Time{}},
		{"detached", WithoutCancel(own), time.Time{}},
		{"over a held caller's, its Deadline panicking", deadlinePanics{held}, time.Time{}},
	} {
		got, ok := Bound(tc.ctx)
		if ok != !tc.want.IsZero() || !got.Equal(tc.want) {
			t.Errorf("%s: Bound = %v %v; want %v", tc.name, got, ok, tc.want)
		}
	}
}
