package db

import (
	"errors"
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// createThenLock is createLocked on every system but Linux, and on Linux
// where the file system has no O_TMPFILE (NFS) or there is no /proc. It
// makes the file at its name, then locks it: it never writes through a
// name already there, hands back the file locked, and gives up (the name
// removed) when the lock is not had within its wait.
func TestCreateThenLockMakesTheFileLockedAndWritesThroughNothing(t *testing.T) {
	neverWritesThroughAName(t, "createThenLock", createThenLock)

	kd := newKeyDir(t)
	tmp := tempName()
	fd, err := createThenLock(int(kd.dir.Fd()), tmp)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	other, err := os.Open(filepath.Join(kd.path, tmp))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := unix.Flock(int(other.Fd()), unix.LOCK_SH|unix.LOCK_NB); err != unix.EWOULDBLOCK {
		t.Errorf("the file createThenLock made: another open's flock = %v, want it held (EWOULDBLOCK)", err)
	}
}

// A lock another open file takes on the new name before createThenLock's
// own (a check's look, held on) makes it give up after its wait, with
// ErrLockTimeout, and remove the name it made: no half-made file is left
// for the next creation to trip on, nor a descriptor open.
func TestCreateThenLockGivesUpOnALockHeldAndRemovesTheName(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	kd := newKeyDir(t)
	tmp := tempName()
	var held *os.File
	testHookCreateStep = func(step string) {
		if step != "named" || held != nil {
			return
		}
		f, err := os.Open(filepath.Join(kd.path, tmp))
		if err != nil {
			t.Error(err)
			return
		}
		if err := unix.Flock(int(f.Fd()), unix.LOCK_SH|unix.LOCK_NB); err != nil {
			t.Error(err)
		}
		held = f
	}
	defer func() { testHookCreateStep = nil }()
	before := fdCount(t)
	fd, err := createThenLock(int(kd.dir.Fd()), tmp)
	if held != nil {
		defer held.Close()
	}
	if err == nil {
		unix.Close(fd)
		t.Fatal("createThenLock with its file's lock held by another open: no error")
	}
	if !errors.Is(err, ErrLockTimeout) {
		t.Errorf("createThenLock with its file's lock held: %v, want ErrLockTimeout", err)
	}
	if _, err := os.Lstat(filepath.Join(kd.path, tmp)); !os.IsNotExist(err) {
		t.Errorf("the name createThenLock made is still there: %v", err)
	}
	if held == nil {
		t.Fatal("the hook held no lock")
	}
	if after := fdCount(t); after != before+1 { // the lock's holder
		t.Errorf("%d descriptors open after the create gave up, %d before and the holder's", after, before)
	}
}

// A meta.db made on the fallback (no O_TMPFILE) is as good as one made
// unnamed: its temp is locked from its open's return on, nothing is
// written through a name already there, and it opens for writing and
// reading again and holds what was written.
func TestCreationWithoutAnUnnamedFileHoldsItsTempsFlockAndOpens(t *testing.T) {
	testHookNoTmpfile = true
	defer func() { testHookNoTmpfile = false }()
	// Not at "named": the fallback's file has its name before its lock
	// (createlocked_other.go), the window O_TMPFILE closes.
	t.Run("the temp's flock", func(t *testing.T) {
		creationHoldsItsTempsFlock(t, "created", "initialised", "before the link")
	})
	t.Run("never through a name", TestCreateLockedNeverWritesThroughAName)

	kd := newKeyDir(t)
	writeAndReadBack(t, kd, mustOpen(t, kd, true))
}

// writeAndReadBack writes a pi version through d, a writer of kd's
// meta.db, closes it, and reads the version back through a new reader:
// the meta.db the open made holds what was written.
func writeAndReadBack(t *testing.T, kd keyDir, d *DB) {
	t.Helper()
	if err := d.Update(func(tx *Tx) error { return tx.PutPiVersion("0.58.3") }); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	r := mustOpen(t, kd, false)
	var got string
	if err := r.View(func(tx *Tx) error {
		sc, err := tx.Sidecars()
		if err == nil && sc.PiVersion != nil {
			got = *sc.PiVersion
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if got != "0.58.3" {
		t.Errorf("pi version read back: %q, want 0.58.3", got)
	}
}

// An open that creates meta.db on the fallback, whose temp a look holds
// locked from its naming on, gives up at the open's LockTimeout, not at
// the fallback's own second: LockTimeout bounds the whole open. Before,
// an open with a LockTimeout of 50 ms gave up after 1.0 s.
func TestCreationWithoutAnUnnamedFileGivesUpAtTheOpensTimeout(t *testing.T) {
	testHookNoTmpfile = true
	defer func() { testHookNoTmpfile = false }()
	kd := newKeyDir(t)
	var held *os.File
	testHookCreateStep = func(step string) {
		if step != "named" || held != nil {
			return
		}
		ents, err := os.ReadDir(kd.path)
		if err != nil || len(ents) != 1 {
			t.Fatalf("the key dir at the temp's naming: %v, %v", ents, err)
		}
		if held, err = os.Open(filepath.Join(kd.path, ents[0].Name())); err != nil {
			t.Fatal(err)
		}
		if err := unix.Flock(int(held.Fd()), unix.LOCK_SH|unix.LOCK_NB); err != nil {
			t.Fatal(err)
		}
	}
	defer func() {
		testHookCreateStep = nil
		if held != nil {
			held.Close()
		}
	}()
	const timeout = 50 * time.Millisecond
	start := time.Now()
	d, err := OpenWriter(kd.dir, kd.db, Options{LockTimeout: timeout})
	elapsed := time.Since(start)
	if err == nil {
		d.Close()
	}
	wantErr(t, err, ErrLockTimeout)
	// The fallback's own wait is a second: half of it is far past the
	// timeout, and far from it.
	if elapsed >= 500*time.Millisecond {
		t.Errorf("an open with a LockTimeout of %v gave up after %v", timeout, elapsed)
	}
	if held == nil {
		t.Fatal("the fallback never named its temp")
	}
	if l := leftovers(t, kd); len(l) != 0 {
		t.Errorf("left in the key dir: %v", l)
	}
	if _, err := os.Lstat(kd.db); !os.IsNotExist(err) {
		t.Errorf("meta.db after the open gave up: %v", err)
	}
}
