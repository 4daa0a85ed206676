package store

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"sessdb/gates"
	"sessdb/internal/durable"
	"sessdb/internal/fsat"
)

// noAtomicRename is the disk of a system with no atomic no-replace
// rename: fsat.RenameNoReplace's link fallback, which a directory refuses
// (EPERM). mkdirErr, if set, is what every mkdir fails with.
type noAtomicRename struct {
	durable.Disk
	mkdirErr error
}

func (noAtomicRename) RenameNoReplace(dir *os.File, from, to string) error {
	return &os.LinkError{Op: "rename", Old: fsat.Join(dir, from), New: fsat.Join(dir, to), Err: unix.EPERM}
}

func (d noAtomicRename) Mkdir(dir *os.File, name string, perm uint32) (bool, error) {
	if d.mkdirErr != nil {
		return false, &os.PathError{Op: "mkdir", Path: fsat.Join(dir, name), Err: d.mkdirErr}
	}
	return d.Disk.Mkdir(dir, name, perm)
}

// TestRenameDirNoReplaceFallback: where the system has no atomic
// no-replace rename, a key dir is renamed aside in two steps (an empty
// dir made at the new name, the dir renamed over it): it moves whole, an
// existing name is refused with EEXIST and nothing moves, and a mkdir
// that fails says so once, naming the path.
func TestRenameDirNoReplaceFallback(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	for _, d := range []string{"a", "taken"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(root, "a", "f"), []byte("data"), 0o600)
	rd, err := fsat.OpenDir(root)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	s.disk = diskWrites{noAtomicRename{}}
	if err := s.renameDirNoReplace(rd, "a", "taken"); !errors.Is(err, unix.EEXIST) {
		t.Fatalf("over an existing dir: %v", err)
	}
	if err := s.renameDirNoReplace(rd, "a", "b"); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(root, "b", "f")); err != nil || string(b) != "data" {
		t.Fatalf("b/f after the two-step rename: %q, %v", b, err)
	}
	s.disk = diskWrites{noAtomicRename{mkdirErr: unix.EACCES}}
	err = s.renameDirNoReplace(rd, "b", "c")
	if !errors.Is(err, unix.EACCES) || strings.Count(err.Error(), "mkdir") != 1 {
		t.Fatalf("a mkdir that failed: %v", err)
	}
}
