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
