package db

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// createLocked and createThenLock that fail on a name already taken leave
// no descriptor open: the unnamed file made for the link included (a
// rival's temp at the same name, or one planted there).
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
	}
}
