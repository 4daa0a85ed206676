package store

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"sessdb/internal/fsat"
)

// The descriptor movedDir names for a key dir's new place is
// close-on-exec from the call that makes it: a child forked and exec'd
// meanwhile (a Go worker's container) must not keep the key dir open.
func TestAMovedDirsDescriptorIsCloseOnExec(t *testing.T) {
	parent := t.TempDir()
	must(t, os.Mkdir(filepath.Join(parent, "moved"), 0o700))
	root, err := fsat.OpenDir(parent)
	must(t, err)
	defer root.Close()
	kd, err := fsat.OpenDir(filepath.Join(parent, "moved"))
	must(t, err)
	defer kd.Close()
	moved, err := movedDir(root, kd, "moved")
	must(t, err)
	defer moved.Close()
	if moved.Fd() == kd.Fd() {
		t.Fatal("movedDir returned the key dir's own descriptor; want a dup")
	}
	if flags, err := unix.FcntlInt(moved.Fd(), unix.F_GETFD, 0); err != nil || flags&unix.FD_CLOEXEC == 0 {
		t.Errorf("the moved dir's descriptor: flags %#x, %v; want FD_CLOEXEC", flags, err)
	}
}
