package db

import (
	"errors"
	"os"
	"runtime/debug"
	"strings"
	"testing"

	"sessdb/internal/faults"
)

// openTemps lists this process's descriptors that refer to a meta.db temp
// (on Linux, from /proc/self/fd; elsewhere the test is skipped).
func openTemps(t *testing.T) []string {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd to list the descriptors")
	}
	var out []string
	for _, e := range ents {
		if target, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && strings.Contains(target, "/"+TempPrefix) {
			out = append(out, target)
		}
	}
	return out
}

// A copy that fails closes its descriptor, and with it lets go of its
// flock. ownFile's error paths returned a nil file, so its deferred
// cleanup closed nil: the temp's descriptor stayed open (and locked)
// until the garbage collector found it, and after the rename (the
// directory's fsync failing) that was the lock of meta.db itself, which
// every later open of the key, this process's too, waited for in vain.
func TestAFailedCopyLetsGoOfItsFile(t *testing.T) {
	// No collection may close a leaked descriptor behind the test's back.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	injected := errors.New("injected")
	for _, at := range []faults.Point{faults.DBOwnFileBeforeRename, faults.DBOwnFileAfterRename} {
		t.Run(string(at), func(t *testing.T) {
			kd := makeDB(t, 0)
			hardLink(t, kd)
			faults.Set(func(p faults.Point) error {
				if p == at {
					return injected
				}
				return nil
			})
			defer faults.Set(nil)
			_, err := OpenWriter(kd.dir, kd.db, testOpts)
			wantErr(t, err, injected)
			faults.Set(nil)
			if open := openTemps(t); len(open) != 0 {
				t.Errorf("the failed copy's temp is still open: %v", open)
			}
			// The next writer gets the key's lock at once.
			putVenue(t, kd, "elsewhere")
		})
	}
}
