package fsat

import (
	"testing"

	"golang.org/x/sys/unix"
)

// TestIgnoringEINTRRetriesEINTRAndNothingElse pins the one retry helper
// that fsat's calls and package db's opens, fsyncs and link go through: a
// call interrupted by a signal is made again until it is not, and any
// other result, EWOULDBLOCK included (db's flock wait has a loop of its
// own for that one), is returned from the first call that gave it.
func TestIgnoringEINTRRetriesEINTRAndNothingElse(t *testing.T) {
	calls := 0
	v, err := IgnoringEINTR(func() (int, error) {
		calls++
		if calls < 3 {
			return -1, unix.EINTR
		}
		return 7, nil
	})
	if v != 7 || err != nil || calls != 3 {
		t.Errorf("interrupted twice, then 7: got %d, %v after %d calls; want 7, nil after 3", v, err, calls)
	}
	for _, want := range []error{unix.EWOULDBLOCK, unix.ENOENT, unix.EIO} {
		calls = 0
		v, err = IgnoringEINTR(func() (int, error) {
			calls++
			if calls > 1 {
				return 0, nil // a retry ends here, not in a loop
			}
			return -1, want
		})
		if v != -1 || err != want || calls != 1 {
			t.Errorf("%v: got %d, %v after %d calls; want -1, %v after 1", want, v, err, calls, want)
		}
	}
}
