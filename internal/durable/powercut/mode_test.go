package powercut

import (
	"os"
	"path/filepath"
	"testing"

	"sessdb/internal/fsat"
)

// A mode set through the journal (Chmod, what check --repair's mode
// repair makes) is the inode's metadata: a cut takes it back unless the
// inode was fsynced after it, a file's by SyncFile and a directory's by
// SyncDir or SyncFile, and it takes back the first mode of two. Before,
// the seam had no chmod, and no cut could take back a mode repair that
// was never fsynced.
func TestACutTakesBackAModeNotFsynced(t *testing.T) {
	parent := t.TempDir()
	path := func(name string) string { return filepath.Join(parent, name) }
	for _, d := range []string{"dir", "dir synced", "dir synced as a file"} {
		must(t, os.Mkdir(path(d), 0o700))
		must(t, os.Chmod(path(d), 0o500))
	}
	for _, f := range []string{"file", "file synced", "file twice"} {
		must(t, os.WriteFile(path(f), []byte("x"), 0o600))
		must(t, os.Chmod(path(f), 0o400))
	}
	j := New()
	open := func(name string) *os.File {
		f, err := os.Open(path(name))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	chmod := func(f *os.File, mode uint32) {
		t.Helper()
		must(t, j.Chmod(f, mode))
	}
	chmod(open("dir"), 0o700)
	d := open("dir synced")
	chmod(d, 0o700)
	must(t, j.SyncDir(d))
	d = open("dir synced as a file")
	chmod(d, 0o700)
	must(t, j.SyncFile(d))
	chmod(open("file"), 0o600)
	f := open("file synced")
	chmod(f, 0o600)
	must(t, j.SyncFile(f))
	f = open("file twice")
	chmod(f, 0o600)
	chmod(f, 0o640)
	// By an O_PATH descriptor too, as check --repair makes it.
	up, err := fsat.OpenDirUnread(path("dir"))
	if err != nil {
		t.Fatal(err)
	}
	defer up.Close()
	chmod(up, 0o750)

	j.Cut(t)
	for name, want := range map[string]os.FileMode{
		"dir": 0o500, "dir synced": 0o700, "dir synced as a file": 0o700,
		"file": 0o400, "file synced": 0o600, "file twice": 0o400,
	} {
		if fi, err := os.Lstat(path(name)); err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s after the cut: %v, %v; want mode %v", name, fi.Mode().Perm(), err, want)
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
