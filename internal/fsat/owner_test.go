package fsat

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// nobody is the uid and gid the tests give a directory to: a user that
// is not the test's.
const nobody = 65534

func ownerOf(t *testing.T, p string) (uid, gid uint32) {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Lstat(p, &st); err != nil {
		t.Fatal(err)
	}
	return st.Uid, st.Gid
}

func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("only root gives a file away: run as root to test it")
	}
}

// Made by root in a directory another user owns, every kind of creation
// is that user's (and the directory's group's): a directory made at a
// descriptor or at a path, a file created afresh, and a file created
// outside the package and handed over. A chown the file system refuses
// leaves the creation as made, and fails nothing; a directory root owns
// asks for no chown at all.
func TestWhatRootCreatesIsItsDirsOwners(t *testing.T) {
	needRoot(t)
	creations := func(d *os.File, p string) map[string]func() error {
		return map[string]func() error{
			"at": func() error { _, err := MkdirNew(d, "at", 0o700); return err },
			"path": func() error {
				_, err := Mkdir(filepath.Join(p, "path")+"/", 0o700)
				return err
			},
			"file": func() error {
				f, err := OpenAt(d, "file", unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL, 0o600)
				if err == nil {
					f.Close()
				}
				return err
			},
			"raw": func() error {
				fd, err := unix.Openat(int(d.Fd()), "raw", unix.O_RDWR|unix.O_CREAT|unix.O_EXCL, 0o600)
				if err != nil {
					return err
				}
				defer unix.Close(fd)
				return Created(int(d.Fd()), fd, 0o600, "raw")
			},
		}
	}
	t.Run("given", func(t *testing.T) {
		d, p := tempDir(t)
		if err := os.Chown(p, nobody, nobody); err != nil {
			t.Fatal(err)
		}
		for name, create := range creations(d, p) {
			if err := create(); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if uid, gid := ownerOf(t, filepath.Join(p, name)); uid != nobody || gid != nobody {
				t.Errorf("%s: owned by %d:%d, want the dir's, %d:%d", name, uid, gid, nobody, nobody)
			}
		}
	})
	t.Run("refused", func(t *testing.T) {
		d, p := tempDir(t)
		if err := os.Chown(p, nobody, nobody); err != nil {
			t.Fatal(err)
		}
		asked := 0
		fchown = func(int, int, int) error { asked++; return unix.EPERM }
		defer func() { fchown = unix.Fchown }()
		for name, create := range creations(d, p) {
			if err := create(); err != nil {
				t.Fatalf("%s: a refused chown failed the creation: %v", name, err)
			}
			if uid, _ := ownerOf(t, filepath.Join(p, name)); uid != 0 {
				t.Errorf("%s: owned by %d after a refused chown", name, uid)
			}
		}
		if asked != 4 {
			t.Errorf("the chown was asked %d times for 4 creations", asked)
		}
	})
	t.Run("root's own dir", func(t *testing.T) {
		d, p := tempDir(t)
		asked := 0
		fchown = func(int, int, int) error { asked++; return nil }
		defer func() { fchown = unix.Fchown }()
		for name, create := range creations(d, p) {
			if err := create(); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
		}
		if asked != 0 {
			t.Errorf("a chown asked %d times in a dir root owns", asked)
		}
	})
}

// GiveAt gives a directory or a regular file away, never through a link,
// and never a file with a second name (which could be outside the
// directory); a FIFO is left as it is.
func TestGiveAt(t *testing.T) {
	needRoot(t)
	d, p := tempDir(t)
	if err := os.Mkdir(filepath.Join(p, "dir"), 0o700); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(p, "file"), "x")
	write(t, filepath.Join(p, "linked"), "x")
	outside := filepath.Join(t.TempDir(), "outside")
	if err := os.Link(filepath.Join(p, "linked"), outside); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("file", filepath.Join(p, "symlink")); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mkfifo(filepath.Join(p, "fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"dir", "file"} {
		if before, err := GiveAt(d, name, nobody, nobody); err != nil || before != 0 {
			t.Errorf("%s: before %d, %v", name, before, err)
		}
		if uid, gid := ownerOf(t, filepath.Join(p, name)); uid != nobody || gid != nobody {
			t.Errorf("%s: owned by %d:%d after GiveAt", name, uid, gid)
		}
	}
	if _, err := GiveAt(d, "linked", nobody, nobody); !errors.Is(err, ErrHardLinked) {
		t.Errorf("a file with two names: %v, want ErrHardLinked", err)
	}
	write(t, filepath.Join(p, "target"), "x")
	os.Remove(filepath.Join(p, "symlink"))
	if err := os.Symlink("target", filepath.Join(p, "symlink")); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"symlink", "fifo"} {
		if _, err := GiveAt(d, name, nobody, nobody); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	for _, p := range []string{outside, filepath.Join(p, "symlink"), filepath.Join(p, "target"), filepath.Join(p, "fifo")} {
		if uid, _ := ownerOf(t, p); uid != 0 {
			t.Errorf("%s: given away (owned by %d)", p, uid)
		}
	}
}

// Mkdir reads the job dir's path as the system does: a link followed by
// ".." leads where the link's target's parent is, not where the cleaned
// path would; trailing slashes name the same directory.
func TestMkdirReadsThePathAsTheSystemDoes(t *testing.T) {
	p := t.TempDir()
	if err := os.MkdirAll(filepath.Join(p, "far", "target"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(p, "far", "target"), filepath.Join(p, "link")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, made string }{
		{filepath.Join(p, "link") + "/../job", filepath.Join(p, "far", "job")},
		{filepath.Join(p, "plain") + "//", filepath.Join(p, "plain")},
	} {
		made, err := Mkdir(tc.path, 0o700)
		if err != nil || !made {
			t.Fatalf("Mkdir(%q): %v, %v", tc.path, made, err)
		}
		if fi, err := os.Lstat(tc.made); err != nil || !fi.IsDir() {
			t.Errorf("Mkdir(%q) made no dir at %s (%v)", tc.path, tc.made, err)
		}
	}
	if made, err := Mkdir(filepath.Join(p, "plain"), 0o700); made || err != nil {
		t.Errorf("an existing dir: made %v, %v", made, err)
	}
	var pe *os.PathError
	if _, err := Mkdir(filepath.Join(p, "missing", "job"), 0o700); !errors.As(err, &pe) || pe.Op != "mkdir" || !errors.Is(err, unix.ENOENT) {
		t.Errorf("a missing parent: %v, want mkdir's ENOENT", err)
	}
}

func TestSplitLast(t *testing.T) {
	for _, tc := range []struct{ path, parent, base string }{
		{"a/b", "a", "b"},
		{"a/link/../b/", "a/link/..", "b"},
		{"/b", "/", "b"},
		{"b", ".", "b"},
		{"/", "/", ""},
		{"a//b//", "a/", "b"},
	} {
		if parent, base := splitLast(tc.path); parent != tc.parent || base != tc.base {
			t.Errorf("splitLast(%q) = %q, %q; want %q, %q", tc.path, parent, base, tc.parent, tc.base)
		}
	}
}
