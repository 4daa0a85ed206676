package db

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"sessdb/internal/fsat"
)

// A temp TakeTemp takes for debris is handed back with its flock held
// until it is closed: a creator that comes to its (exclusive) flock
// meanwhile waits, and finds the name gone once the caller has removed it.
func TestTakeTempHoldsTheTempsFlockUntilItIsClosed(t *testing.T) {
	kd := newKeyDir(t)
	name := TempPrefix + "debris"
	path := filepath.Join(kd.path, name)
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-2 * createLockWait)
	if err := os.Chtimes(path, old, old); err != nil {
		t.Fatal(err)
	}
	taken, err := TakeTemp(kd.dir, name)
	if taken == nil || err != nil {
		t.Fatalf("TakeTemp of an old empty temp no one holds: %v, %v; want it taken", taken, err)
	}
	creator, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer creator.Close()
	if err := unix.Flock(int(creator.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != unix.EWOULDBLOCK {
		t.Errorf("another open's flock while the temp is taken: %v; want EWOULDBLOCK", err)
	}
	taken.Close()
	if err := unix.Flock(int(creator.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		t.Errorf("another open's flock once the taken temp is closed: %v; want it had", err)
	}
	// Held now by that open: in flight, not taken.
	if again, err := TakeTemp(kd.dir, name); again != nil || err != nil {
		if again != nil {
			again.Close()
		}
		t.Errorf("TakeTemp of a temp another open holds: %v, %v; want nil, nil", again, err)
	}
}

// A creator without O_TMPFILE stalled between its temp's create and its
// flock for longer than a look waits (createLockWait) has its temp taken
// for debris and removed (check --repair, reap's sweep, migrate's). It
// makes its temp again under another name, and the open succeeds: before,
// its link found no temp, and the open failed (a promotion's
// promote-failed). The look removes the temp either before the creator
// asks for the flock or while it waits for it (the look holds the flock
// through the removal, TakeTemp).
func TestACreatorWhoseTempWasTakenForDebrisMakesItAgain(t *testing.T) {
	for _, whileWaiting := range []bool{false, true} {
		t.Run(map[bool]string{false: "removed before its flock", true: "removed while it waits for its flock"}[whileWaiting], func(t *testing.T) {
			testHookNoTmpfile = true
			t.Cleanup(func() { testHookNoTmpfile = false })
			kd := newKeyDir(t)
			var named []string
			removed := make(chan error, 1)
			testHookCreateStep = func(step string) {
				if step != "named" {
					return
				}
				tmp := onlyTemp(t, kd)
				named = append(named, tmp)
				if len(named) > 1 {
					return
				}
				// Stalled: older than a creator waits for its flock.
				old := time.Now().Add(-2 * createLockWait)
				if err := os.Chtimes(filepath.Join(kd.path, tmp), old, old); err != nil {
					t.Error(err)
				}
				taken, err := TakeTemp(kd.dir, tmp)
				if taken == nil || err != nil {
					t.Errorf("TakeTemp of the stalled creator's temp: %v, %v; want it taken", taken, err)
					removed <- nil
					return
				}
				remove := func() {
					err := unix.Unlinkat(int(kd.dir.Fd()), tmp, 0)
					taken.Close()
					removed <- err
				}
				if !whileWaiting {
					remove()
					return
				}
				go func() {
					time.Sleep(50 * time.Millisecond) // the creator is at its flock
					remove()
				}()
			}
			t.Cleanup(func() { testHookCreateStep = nil })

			d, err := OpenWriter(kd.dir, kd.db, testOpts)
			if err != nil {
				t.Fatalf("the open whose meta.db temp was taken for debris: %v", err)
			}
			if err := <-removed; err != nil {
				t.Fatalf("the look's removal of the temp: %v", err)
			}
			if err := d.Update(func(tx *Tx) error { return tx.PutPiVersion("0.58.3") }); err != nil {
				t.Fatal(err)
			}
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
			if len(named) != 2 || named[0] == named[1] {
				t.Errorf("temps made: %q; want the taken one, then another", named)
			}
			names, err := fsat.ReadDirNames(kd.dir)
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range names {
				if strings.HasPrefix(n, TempPrefix) {
					t.Errorf("%s left in the key dir", n)
				}
			}
			r := mustOpen(t, kd, false)
			if err := r.View(func(tx *Tx) error {
				sc, err := tx.Sidecars()
				if err == nil && (sc.PiVersion == nil || *sc.PiVersion != "0.58.3") {
					t.Errorf("pi version read back: %v; want 0.58.3", sc.PiVersion)
				}
				return err
			}); err != nil {
				t.Fatal(err)
			}
		})
	}
}
