package fsat

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"sessdb/internal/testfs"
)

// ResolvedPath says where a path leads as the kernel takes it: links
// resolved in order ("link/.." the parent of the link's target), a tail
// that does not exist kept, a relative path made absolute; and fails for
// a relative path whose working directory is gone, and for a path whose
// links lead past PATH_MAX, which the kernel still opens (it returned
// such a path cleaned, its links unresolved, and a walk of one leading
// to "/" was not refused).
func TestResolvedPathLeadsWhereTheKernelGoes(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	deep := filepath.Join(base, "a", "b")
	if err := os.MkdirAll(deep, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(base, "file"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(base, "link")
	if err := os.Symlink(deep, link); err != nil {
		t.Fatal(err)
	}
	t.Chdir(base)
	for p, want := range map[string]string{
		base:                              base,
		link:                              deep,
		link + "/..":                      filepath.Join(base, "a"),
		link + "/../b/new/more":           filepath.Join(deep, "new", "more"),
		link + "/missing/..":              filepath.Join(deep),
		filepath.Join(base, "no", "such"): filepath.Join(base, "no", "such"),
		filepath.Join(base, "file", "x"):  filepath.Join(base, "file", "x"), // nothing there either
		"link/x":                          filepath.Join(deep, "x"),
		"/":                               "/",
	} {
		got, err := ResolvedPath(p)
		if err != nil || got != want {
			t.Errorf("ResolvedPath(%q) = %q, %v; want %q", p, got, err, want)
		}
	}
	testfs.ChdirGone(t, base)
	if got, err := ResolvedPath("x"); err == nil {
		t.Errorf("ResolvedPath of a relative path, its working directory gone: %q, want an error", got)
	}
	if got, err := ResolvedPath(link); err != nil || got != deep {
		t.Errorf("ResolvedPath of an absolute path, the working directory gone: %q, %v; want %q", got, err, deep)
	}

	past := testfs.PastPathMax(t, base, "/")
	if _, err := os.ReadDir(past); err != nil {
		t.Fatalf("the kernel does not take the path past PATH_MAX: %v", err)
	}
	for _, p := range []string{past, past + "/..", past + "/missing"} {
		if got, err := ResolvedPath(p); err != unix.ENAMETOOLONG {
			t.Errorf("ResolvedPath of a path whose links lead past PATH_MAX: %q, %v; want ENAMETOOLONG alone, not the path it was met on", got, err)
		}
	}
}

// A path through a loop of links leads nowhere: ResolvedPath answers
// ELOOP, the errno alone, as the kernel answers a stat of it (its
// callers judge the error as a stat's: a loop in a configured path is the
// configuration's mistake). Go's EvalSymlinks gave up on it with an error
// of its own that carried no errno.
func TestResolvedPathThroughALoopOfLinksIsELOOP(t *testing.T) {
	a := testfs.LinkLoop(t, t.TempDir())
	if _, err := os.Stat(a); !errors.Is(err, unix.ELOOP) {
		t.Fatalf("the kernel's stat of the loop: %v; want ELOOP", err)
	}
	for _, p := range []string{a, a + "/x", a + "/.."} {
		if got, err := ResolvedPath(p); err != unix.ELOOP {
			t.Errorf("ResolvedPath(%q) = %q, %v; want ELOOP alone", p, got, err)
		}
	}
}
