package dirflock

import (
	"fmt"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"sessdb/internal/faults"
)

// Flock says to take the flock unless a test set otherwise; Refuse and
// Ignore hold until their restore, which brings back what was set
// before; neither may be set while a test runs beside others, and a
// refusal must be an error.
func TestFlockIsTakenUnlessATestSaysOtherwise(t *testing.T) {
	want := func(who string, take bool, err error) {
		t.Helper()
		if gotTake, gotErr := Flock(); gotTake != take || gotErr != err {
			t.Errorf("%s: Flock() = %t, %v; want %t, %v", who, gotTake, gotErr, take, err)
		}
	}
	want("nothing set", true, nil)
	restoreRefusal := Refuse(unix.EINVAL)
	want("refused", false, unix.EINVAL)
	restoreIgnore := Ignore()
	want("ignored over a refusal", false, nil)
	restoreIgnore()
	want("the ignore restored", false, unix.EINVAL)
	restoreRefusal()
	want("the refusal restored", true, nil)

	for _, tc := range []struct {
		name, says string
		set        func() func()
	}{
		{"Refuse(nil)", "a refusal is an error", func() func() { return Refuse(nil) }},
		{"Ignore beside another test", "beside", func() func() { done := faults.Beside(); defer done(); return Ignore() }},
	} {
		func() {
			defer func() {
				if r := recover(); !strings.Contains(fmt.Sprint(r), tc.says) {
					t.Errorf("%s: panic %v; want one saying %q", tc.name, r, tc.says)
				}
			}()
			tc.set()()
		}()
	}
	want("after the panics", true, nil)
}
