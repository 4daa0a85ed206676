package db

import (
	"bytes"
	"errors"
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
			kd := newKeyDir(t)
			var named []string
			removed := make(chan error, 1)
			atEachTempNamed(t, func() {
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
			})

			d, err := OpenWriter(kd.dir, kd.db, testOpts)
			if err != nil {
				t.Fatalf("the open whose meta.db temp was taken for debris: %v", err)
			}
			if err := <-removed; err != nil {
				t.Fatalf("the look's removal of the temp: %v", err)
			}
			writeAndReadBack(t, kd, d)
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
		})
	}
}

// atEachTempNamed makes the test's creations take the fallback of a file
// system without O_TMPFILE, and calls named between each temp's create
// and its flock, the window a look can take the temp for debris in.
func atEachTempNamed(t *testing.T, named func()) {
	testHookNoTmpfile = true
	testHookCreateStep = func(step string) {
		if step == "named" {
			named()
		}
	}
	t.Cleanup(func() { testHookNoTmpfile, testHookCreateStep = false, nil })
}

// A creator without O_TMPFILE whose every temp is taken for debris (each
// removed between its create and its flock) makes its temp again only
// while its open's deadline (LockTimeout) lasts, then fails with that
// reason and leaves no temp: an open waits for nothing past its deadline.
// Making the temp again with no deadline, the open went on for as long as
// the temps were taken (here, until the test gave up taking them). A temp
// given up keeps no descriptor open.
func TestACreatorWhoseTempsAreAllTakenGivesUpAtItsDeadline(t *testing.T) {
	kd := newKeyDir(t)
	opts := Options{LockTimeout: 100 * time.Millisecond}
	var start time.Time
	made, pastDeadline := 0, false
	atEachTempNamed(t, func() {
		made++
		// Far past the open's deadline (a hundred times it: no stall of a
		// loaded machine is that long), the creator is still making temps:
		// it is let through, and the test fails.
		if time.Since(start) > 100*opts.LockTimeout {
			pastDeadline = true
			return
		}
		tmp := onlyTemp(t, kd)
		if err := unix.Unlinkat(int(kd.dir.Fd()), tmp, 0); err != nil { // a look's removal of debris
			t.Error(err)
		}
	})

	before := openFDs()
	start = time.Now()
	d, err := OpenWriter(kd.dir, kd.db, opts)
	if d != nil {
		d.Close()
	}
	if pastDeadline {
		t.Fatalf("the creator made %d temps, still making them a hundred times its deadline past it (open: %v); want it to give up at its deadline", made, err)
	}
	if err == nil || !errors.Is(err, errTempTaken) {
		t.Errorf("the open whose every temp was taken: %v; want the creation's failure, errTempTaken", err)
	}
	if after := openFDs(); after > before && before >= 0 {
		t.Errorf("%d descriptors open after the open gave up, %d before: a taken temp's descriptor is kept", after, before)
	}
	if made < 2 {
		t.Errorf("temps made: %d; want the creator to make its temp again while its deadline lasts", made)
	}
	names, err := fsat.ReadDirNames(kd.dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if strings.HasPrefix(n, TempPrefix) || n == FileName {
			t.Errorf("%s left in the key dir", n)
		}
	}
}

// openFDs is the number of descriptors the process has open, or -1 where
// /proc/self/fd is not there to tell.
func openFDs() int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1
	}
	return len(ents)
}

// A creator without O_TMPFILE whose temp is taken for debris before its
// flock, and something else made at the temp's name meanwhile (a file
// planted there, another program's), finds once it has its flock that the
// name is not its file's: it makes its temp again, links only its own
// file to meta.db, and leaves the file at that name as it is, neither
// linked into place nor removed. Taken for its own, the planted file
// became meta.db; removed, the creator unlinked what it had not made.
func TestACreatorFindingAnotherFileAtItsTakenTempsNameLeavesIt(t *testing.T) {
	kd := newKeyDir(t)
	planted := []byte("planted: not the creator's file\n")
	var named []string
	atEachTempNamed(t, func() {
		if len(named) > 0 {
			named = append(named, "again")
			return
		}
		tmp := onlyTemp(t, kd)
		named = append(named, tmp)
		if err := unix.Unlinkat(int(kd.dir.Fd()), tmp, 0); err != nil { // a look's removal of debris
			t.Error(err)
		}
		if err := os.WriteFile(filepath.Join(kd.path, tmp), planted, 0o600); err != nil {
			t.Error(err)
		}
	})

	d, err := OpenWriter(kd.dir, kd.db, testOpts)
	if err != nil {
		t.Fatalf("the open whose temp's name was taken and made again by another: %v", err)
	}
	writeAndReadBack(t, kd, d)
	if len(named) != 2 {
		t.Fatalf("temps made: %q; want the taken one, then another", named)
	}
	got, err := os.ReadFile(filepath.Join(kd.path, named[0]))
	if err != nil || !bytes.Equal(got, planted) {
		t.Errorf("the file planted at the taken temp's name: %q, %v; want it left as it was", got, err)
	}
}
