package store

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"sessdb/db"
	"sessdb/gates"
	"sessdb/internal/faults"
	"sessdb/internal/fsat"
)

// creatorAboutToLock plays a meta.db's creator where the system has no
// O_TMPFILE (every one but Linux, and NFS): it makes the temp name under
// key, empty, and takes its flock only when a look asks about it for the
// second time, between that ask's open and its flock. It returns the
// temp's path; the flock is held until the test ends.
func creatorAboutToLock(t *testing.T, root, key, name string) string {
	t.Helper()
	tmp := filepath.Join(root, key, name)
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	asks := 0
	fsat.TestHookFlockedNowOpened = func(n string) {
		if n != name {
			return
		}
		if asks++; asks == 2 {
			if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
				t.Error(err)
			}
		}
	}
	t.Cleanup(func() { fsat.TestHookFlockedNowOpened = nil })
	return tmp
}

// A check that finds a meta.db temp made an instant ago and not yet
// locked, as a creation without O_TMPFILE has it between its create and
// its flock, asks again until its creator locks it, and reports nothing:
// it reported a stray temp, a problem.
func TestCheckWaitsForAMetaDBTempAboutToBeLocked(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	key := chkKey(t, s, "creation window look")
	name := db.TempPrefix + "00000000000000e1"
	creatorAboutToLock(t, root, key, name)
	for _, f := range checkFindings(t, s, CheckOptions{}) {
		if f.Severity == SeverityProblem {
			t.Errorf("check found %s %s: %s", f.Kind, f.Path, f.Detail)
		}
	}
}

// check --repair removes every temp of a key whose stray temp it repairs,
// but not a meta.db temp its creator is about to lock: one made after the
// look, an instant before the repair lists the key, is left. The repair
// removed it, and the creation failed.
func TestCheckRepairLeavesAMetaDBTempAboutToBeLocked(t *testing.T) {
	s, root, clock := newTestStore(t, gates.Bounds{})
	key := chkKey(t, s, "creation window repair")
	stray := filepath.Join(root, key, tmpPrefix+"00000000000000e2")
	chkOldFile(t, stray, clock.now.Add(-time.Hour))
	name := db.TempPrefix + "00000000000000e3"
	var tmp string
	faults.Set(func(p faults.Point) error {
		if p == faults.CheckAfterKeyEntries && tmp == "" {
			tmp = creatorAboutToLock(t, root, key, name)
		}
		return nil
	})
	t.Cleanup(func() { faults.Set(nil) })
	found := checkFindings(t, s, CheckOptions{Repair: true})
	if tmp == "" {
		t.Fatal("the check never finished looking at the key's entries")
	}
	if _, err := os.Lstat(stray); !os.IsNotExist(err) {
		t.Fatalf("the stray promotion temp after the repair: %v; want it removed (found %+v)", err, found)
	}
	if _, err := os.Lstat(tmp); err != nil {
		t.Errorf("the meta.db temp about to be locked, after the repair: %v; want it left", err)
	}
	for _, f := range found {
		if f.Path == key+"/"+name && f.Severity == SeverityProblem {
			t.Errorf("check --repair found %s %s: %s", f.Kind, f.Path, f.Detail)
		}
	}
}
