package fsat

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// automountAt marks dir as an automounter's for the test's length
// (TestHookAutomountDir), as no test can mount autofs.
func automountAt(t *testing.T, dir string) {
	t.Helper()
	var want unix.Stat_t
	if err := unix.Stat(dir, &want); err != nil {
		t.Fatal(err)
	}
	TestHookAutomountDir = func(fd int) bool {
		var st unix.Stat_t
		return unix.Fstat(fd, &st) == nil && st.Dev == want.Dev && st.Ino == want.Ino
	}
	t.Cleanup(func() { TestHookAutomountDir = nil })
}

// StatNoAutomount answers as stat(2) does, links followed (relative,
// absolute, in the middle and at the end, and ".."), and looks up no name
// in a directory of an automounter's: a path through one, as given or
// through a link, is ErrAutomount, never the file's stat (a password
// like /net/host/x looked up there sent host to the automounter).
func TestStatNoAutomountStatsAsStatDoesButLooksInNoAutomountedDir(t *testing.T) {
	base := t.TempDir()
	t.Chdir(base)
	for _, d := range []string{"auto/dir", "plain/dir"} {
		if err := os.MkdirAll(filepath.Join(base, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"auto/dir/file", "plain/dir/file"} {
		if err := os.WriteFile(filepath.Join(base, f), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for name, target := range map[string]string{
		"rel": "plain/dir", "abs": filepath.Join(base, "plain"), "toauto": "auto/dir",
		"filelink": "plain/dir/file", "slashlink": "plain/dir/file/", "loop": "loop", "up": "plain/dir/../dir",
	} {
		if err := os.Symlink(target, filepath.Join(base, name)); err != nil {
			t.Fatal(err)
		}
	}
	same := []string{
		base + "/plain/dir/file", base + "/rel/file", base + "/abs/dir/file", base + "/filelink",
		base + "/up/file", base + "/plain/../plain/dir/", "rel/file", "./plain//dir/./file", base + "/auto/dir/file", "/", ".",
	}
	for _, p := range same {
		var want unix.Stat_t
		if err := unix.Stat(p, &want); err != nil {
			t.Fatalf("stat %q: %v", p, err)
		}
		got, err := StatNoAutomount(p)
		if err != nil || got.Dev != want.Dev || got.Ino != want.Ino || got.Mode != want.Mode {
			t.Errorf("StatNoAutomount(%q) = ino %d mode %o, %v; want stat's, ino %d mode %o", p, got.Ino, got.Mode, err, want.Ino, want.Mode)
		}
	}
	for p, want := range map[string]error{
		base + "/plain/dir/file/x": unix.ENOTDIR,
		// A trailing slash (or "/.") after a file, as given or in a
		// link's target, asks for a directory: stat(2)'s ENOTDIR.
		base + "/plain/dir/file/":  unix.ENOTDIR,
		base + "/plain/dir/file/.": unix.ENOTDIR,
		base + "/filelink/":        unix.ENOTDIR,
		base + "/slashlink":        unix.ENOTDIR,
		base + "/plain/gone":       unix.ENOENT,
		base + "/loop/x":           unix.ELOOP,
		"":                         unix.ENOENT,
	} {
		if _, err := StatNoAutomount(p); !errors.Is(err, want) {
			t.Errorf("StatNoAutomount(%q) = %v; want %v", p, err, want)
		}
	}
	automountAt(t, filepath.Join(base, "auto"))
	for _, p := range []string{base + "/auto/dir/file", base + "/toauto/file", "auto/dir", base + "/auto/gone"} {
		if st, err := StatNoAutomount(p); !errors.Is(err, ErrAutomount) {
			t.Errorf("StatNoAutomount(%q) through the automounted dir = mode %o, %v; want ErrAutomount", p, st.Mode, err)
		}
	}
	// The automounted dir itself is looked at (in its parent), not in.
	if st, err := StatNoAutomount(base + "/auto"); err != nil || !IsDir(&st) {
		t.Errorf("StatNoAutomount of the automounted dir = %v; want its stat", err)
	}
	if st, err := StatNoAutomount(base + "/plain/dir/file"); err != nil || !IsRegular(&st) {
		t.Errorf("StatNoAutomount beside it = %v; want the file", err)
	}
}
