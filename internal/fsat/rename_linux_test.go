package fsat

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// On a filesystem that refuses RENAME_NOREPLACE (EINVAL: NFS; ENOSYS: an
// old kernel), RenameNoReplace falls back to link and unlink: the file
// takes its new name, and an existing name is still never replaced
// (mutation sweep: the EINVAL/ENOSYS -> errNoAtomic return dropped, and
// the fallback's call deleted, each failed every such rename; no test
// filesystem refuses the flag).
func TestRenameNoReplaceFallsBackWhereTheFlagIsRefused(t *testing.T) {
	for _, errno := range []unix.Errno{unix.EINVAL, unix.ENOSYS} {
		d, p := tempDir(t)
		write(t, filepath.Join(p, "a"), "a's")
		write(t, filepath.Join(p, "taken"), "taken's")
		renameat2 = func(int, string, int, string, uint) error { return errno }
		err := RenameNoReplace(d, "a", "b")
		errTaken := RenameNoReplace(d, "b", "taken")
		renameat2 = unix.Renameat2
		if err != nil {
			t.Fatalf("%v: RenameNoReplace(a, b) = %v", errno, err)
		}
		if b, err := os.ReadFile(filepath.Join(p, "b")); err != nil || string(b) != "a's" {
			t.Errorf("%v: b holds %q, %v; want a's", errno, b, err)
		}
		if _, err := os.Lstat(filepath.Join(p, "a")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%v: a is still there: %v", errno, err)
		}
		if !errors.Is(errTaken, unix.EEXIST) {
			t.Errorf("%v: RenameNoReplace onto an existing name = %v; want EEXIST", errno, errTaken)
		}
		if b, _ := os.ReadFile(filepath.Join(p, "taken")); string(b) != "taken's" {
			t.Errorf("%v: the existing name now holds %q", errno, b)
		}
	}
}

// RenameNoReplaceAtomic is the atomic rename alone: it renames, refuses
// an existing name with EEXIST, and where the flag is refused it returns
// the system's errno and changes nothing (no link, no unlink: the fallback
// is its caller's, fleet/shared's).
func TestRenameNoReplaceAtomicHasNoFallback(t *testing.T) {
	d, p := tempDir(t)
	write(t, filepath.Join(p, "a"), "a's")
	write(t, filepath.Join(p, "taken"), "taken's")
	if err := RenameNoReplaceAtomic(d, "a", "b"); err != nil {
		t.Fatalf("RenameNoReplaceAtomic(a, b) = %v", err)
	}
	if err := RenameNoReplaceAtomic(d, "b", "taken"); !errors.Is(err, unix.EEXIST) {
		t.Fatalf("onto an existing name = %v; want EEXIST", err)
	}
	renameat2 = func(int, string, int, string, uint) error { return unix.EINVAL }
	err := RenameNoReplaceAtomic(d, "b", "c")
	renameat2 = unix.Renameat2
	if !errors.Is(err, unix.EINVAL) {
		t.Fatalf("where the flag is refused = %v; want EINVAL", err)
	}
	for name, want := range map[string]string{"b": "a's", "taken": "taken's"} {
		if got, err := os.ReadFile(filepath.Join(p, name)); err != nil || string(got) != want {
			t.Errorf("%s holds %q, %v; want %q", name, got, err, want)
		}
	}
	if _, err := os.Lstat(filepath.Join(p, "c")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("c was made where the flag is refused: %v", err)
	}
}
