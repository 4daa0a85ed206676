package fsat

import (
	"os"
	"path/filepath"
	"testing"
)

// ResolvedPath says where a path leads as the kernel takes it: links
// resolved in order ("link/.." the parent of the link's target), a tail
// that does not exist kept, a relative path made absolute; and fails only
// for a relative path whose working directory is gone.
func TestResolvedPathLeadsWhereTheKernelGoes(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	deep := filepath.Join(base, "a", "b")
	if err := os.MkdirAll(deep, 0o700); err != nil {
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
		"link/x":                          filepath.Join(deep, "x"),
		"/":                               "/",
	} {
		got, err := ResolvedPath(p)
		if err != nil || got != want {
			t.Errorf("ResolvedPath(%q) = %q, %v; want %q", p, got, err, want)
		}
	}
	gone := filepath.Join(base, "gone")
	if err := os.Mkdir(gone, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Chdir(gone)
	if err := os.Remove(gone); err != nil {
		t.Fatal(err)
	}
	if got, err := ResolvedPath("x"); err == nil {
		t.Errorf("ResolvedPath of a relative path, its working directory gone: %q, want an error", got)
	}
	if got, err := ResolvedPath(link); err != nil || got != deep {
		t.Errorf("ResolvedPath of an absolute path, the working directory gone: %q, %v; want %q", got, err, deep)
	}
}
