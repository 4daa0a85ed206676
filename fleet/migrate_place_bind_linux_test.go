package fleet

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"sessdb/store"
)

// CheckPlaces tells one dir named by two paths that no link joins (a
// bind mount of the sessions root elsewhere, as a container or an NFS
// export sees it) by its device and inode, at the dirs themselves and at
// every dir above the one inside the other: the root's bind mount given
// as the transcripts dir is the root, a dir inside the bind mount is
// inside the root (at a key dir, or at another name), and a root inside
// the bind mount of the transcripts dir is inside it. Compared by their
// letters alone, each was a dir apart, and the migration marked the
// root (or wrote the fleet's files into it) as CheckPlaces is there to
// refuse (mutnew47: mutants of sameFile's two calls).
func TestCheckPlacesSeesOneDirThroughABindMount(t *testing.T) {
	root := filepath.Join(t.TempDir(), "root")
	key := store.Key("github", "acme/widget", "bound")
	for _, d := range []string{filepath.Join(root, "fleet"), filepath.Join(root, key, "t")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	alias := filepath.Join(t.TempDir(), "alias")
	if err := os.Mkdir(alias, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount(root, alias, "", unix.MS_BIND, ""); err != nil {
		t.Skipf("no bind mount here: %v", err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(alias, unix.MNT_DETACH); err != nil {
			t.Error(err)
		}
	})
	for _, tc := range []struct {
		name      string
		root, dir string
		where     int
		entry     string
	}{
		{"the root's bind mount", root, alias, DirIsRoot, ""},
		{"a key dir's subdir through the bind mount", root, filepath.Join(alias, key, "t"), DirInKeyDir, key},
		{"a dir at no key through the bind mount", root, filepath.Join(alias, "fleet"), DirInRoot, "fleet"},
		{"a root inside the dir's bind mount", filepath.Join(alias, "fleet"), root, RootInDir, "fleet"},
	} {
		var pe *PlaceError
		err := CheckPlaces(tc.root, tc.dir)
		if !errors.As(err, &pe) || pe.Where != tc.where || pe.Key+pe.Name != tc.entry {
			t.Errorf("%s: %v; want a PlaceError %d at %q", tc.name, err, tc.where, tc.entry)
		}
	}
	if err := CheckPlaces(root, t.TempDir()); err != nil {
		t.Errorf("a dir apart: %v", err)
	}
}
