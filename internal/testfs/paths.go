package testfs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// PastPathMax returns a short path, under dir, that the kernel takes to
// target (a link at its end) but whose links, resolved one by one into a
// single path, spell more than PATH_MAX (4096) bytes: two links, each to
// a chain of nine directories of 240-byte names, the second chain below
// the first. filepath.EvalSymlinks of it fails (ENAMETOOLONG) where an
// open of it succeeds.
func PastPathMax(t testing.TB, dir, target string) string {
	t.Helper()
	chain := func() string {
		names := make([]string, 9)
		for i := range names {
			names[i] = strings.Repeat(string(rune('a'+i)), 240)
		}
		return filepath.Join(names...)
	}
	first := filepath.Join(dir, chain())
	if err := os.MkdirAll(first, 0o700); err != nil {
		t.Fatal(err)
	}
	one := filepath.Join(dir, "past-1")
	if err := os.Symlink(first, one); err != nil {
		t.Fatal(err)
	}
	second := filepath.Join(one, chain())
	if err := os.MkdirAll(second, 0o700); err != nil {
		t.Fatal(err)
	}
	two := filepath.Join(dir, "past-2")
	if err := os.Symlink(second, two); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(two, "to")); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(two, "to")
}

// ChdirGone makes a directory under dir the working directory for the
// rest of t (t.Chdir) and removes it: a relative path is then one whose
// working directory is gone, which os.Getwd cannot name but whose ".."
// the kernel still takes.
func ChdirGone(t *testing.T, dir string) {
	t.Helper()
	gone := filepath.Join(dir, "gone")
	if err := os.Mkdir(gone, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Chdir(gone)
	if err := os.Remove(gone); err != nil {
		t.Fatal(err)
	}
}

// LinkLoop makes two links in dir, each to the other, and returns the
// first: a path through it leads nowhere (the kernel answers ELOOP).
func LinkLoop(t testing.TB, dir string) string {
	t.Helper()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	if err := os.Symlink(b, a); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(a, b); err != nil {
		t.Fatal(err)
	}
	return a
}
