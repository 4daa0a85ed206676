package db

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"

	"golang.org/x/sys/unix"
)

// createLocked and createThenLock that fail on a name already taken leave
// no descriptor open, the unnamed file made for the link included, and
// leave the name alone (a rival's temp at the same name, or one planted
// there).
func TestACreateOverATakenNameLeavesNoDescriptorOpen(t *testing.T) {
	for what, create := range map[string]func(dirfd int, name string) (int, error){
		"createLocked": createLocked, "createThenLock": createThenLock,
	} {
		kd := newKeyDir(t)
		tmp := tempName()
		if err := os.WriteFile(filepath.Join(kd.path, tmp), nil, 0o600); err != nil {
			t.Fatal(err)
		}
		before := fdCount(t)
		fd, err := create(int(kd.dir.Fd()), tmp)
		if err == nil {
			unix.Close(fd)
			t.Fatalf("%s over a file: no error", what)
		}
		if after := fdCount(t); after != before {
			t.Errorf("%s over a file: %d descriptors open after, %d before", what, after, before)
		}
		// The name taken is not the create's to remove: a rival's temp.
		if _, err := os.Lstat(filepath.Join(kd.path, tmp)); err != nil {
			t.Errorf("%s over a file removed it: %v", what, err)
		}
	}
}

// A writer's open that creates meta.db, then its Close, leaves no
// descriptor open: the temp create linked into place included.
func TestACreationLeavesNoDescriptorOpen(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1)) // a finalizer would hide a leak
	for _, noTmpfile := range []bool{false, true} {
		testHookNoTmpfile = noTmpfile
		kd := newKeyDir(t)
		before := fdCount(t)
		d, err := OpenWriter(kd.dir, kd.db, testOpts)
		if err != nil {
			testHookNoTmpfile = false
			t.Fatal(err)
		}
		d.Close()
		testHookNoTmpfile = false
		if after := fdCount(t); after != before {
			t.Errorf("without O_TMPFILE %v: %d descriptors open after a creation, %d before", noTmpfile, after, before)
		}
	}
}

// createThenLock that gives up on a lock held on its file (a check's look
// at that instant) leaves no descriptor open.
func TestACreateThatGivesUpOnItsLockLeavesNoDescriptorOpen(t *testing.T) {
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
	if err == nil {
		unix.Close(fd)
		t.Fatal("createThenLock with its file's lock held: no error")
	}
	if held == nil {
		t.Fatal("the hook held no lock")
	}
	defer held.Close()
	if after := fdCount(t); after != before+1 { // the lock's holder
		t.Errorf("%d descriptors open after the create gave up, %d before and the holder's", after, before)
	}
}
