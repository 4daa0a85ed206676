package callerctx

import (
	"context"
	"testing"
	"time"
)

// One package's entry holds what another's entry held and bounded: the
// fleet holds a caller's context and gives etcdmeta a request timeout
// made from it, and etcdmeta's entries hold that in turn. Deadline reads
// the first caller's deadline through both; before, it read only the
// nearest held context's caller, the request timeout's child, and a
// backoff there waited as if the caller had the whole request timeout.
// A context detached with WithoutCancel on the way still hides it.
func TestDeadlineReadsTheCallersThroughOneHeldInAnother(t *testing.T) {
	soon := time.Now().Add(time.Minute)
	caller, cancel := context.WithDeadline(context.Background(), soon)
	defer cancel()
	req, cancelReq := context.WithTimeout(Of(caller), time.Hour)
	defer cancelReq()
	inner, cancelInner := context.WithTimeout(Of(req), 2*time.Hour)
	defer cancelInner()
	for what, c := range map[string]context.Context{"the outer held": Of(req), "its child": inner} {
		if d, ok := Deadline(c); !ok || !d.Equal(soon) {
			t.Errorf("Deadline(%s) = %v, %v; want the first caller's %v", what, d, ok, soon)
		}
	}
	detached, cancelDetached := context.WithTimeout(Of(WithoutCancel(req)), 2*time.Hour)
	defer cancelDetached()
	if d, ok := Deadline(detached); !ok || d.Before(time.Now().Add(time.Hour+30*time.Minute)) {
		t.Errorf("Deadline through WithoutCancel = %v, %v; want its own, two hours off", d, ok)
	}
	// A caller whose Value panics still has its deadline read.
	vp := Of(valuePanics{caller})
	if d, ok := Deadline(vp); !ok || !d.Equal(soon) {
		t.Errorf("Deadline of a caller whose Value panics = %v, %v; want %v", d, ok, soon)
	}
	// A caller whose Value leads back to a context derived from its own
	// held one ends the read (no stack overflow).
	l := &loops{Context: caller}
	lh := Of(l)
	l.back, cancelInner = context.WithTimeout(lh, time.Hour)
	defer cancelInner()
	if d, ok := Deadline(l.back); !ok || !d.Equal(soon) {
		t.Errorf("Deadline of a looping caller = %v, %v; want %v", d, ok, soon)
	}
}

// valuePanics panics in Value.
type valuePanics struct{ context.Context }

func (valuePanics) Value(any) any { panic("the caller's Value") }

// loops answers every Value from back, a context derived from its own
// held one.
type loops struct {
	context.Context
	back context.Context
}

func (l *loops) Value(key any) any { return l.back.Value(key) }
