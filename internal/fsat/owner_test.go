package fsat

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
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
	if !givesAway {
		t.Skip("this system makes no directory as another user, and gives root's creations to no one")
	}
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
		refuseFsids(t)
		for name, create := range creations(d, p) {
			if err := create(); err != nil {
				t.Fatalf("%s: a refused chown or setfsuid failed the creation: %v", name, err)
			}
			if uid, _ := ownerOf(t, filepath.Join(p, name)); uid != 0 {
				t.Errorf("%s: owned by %d after a refused chown or setfsuid", name, uid)
			}
		}
		if asked != 2 {
			t.Errorf("the chown was asked %d times for 2 files", asked)
		}
	})
	t.Run("root's own dir", func(t *testing.T) {
		d, p := tempDir(t)
		asked := 0
		fchown = func(int, int, int) error { asked++; return nil }
		defer func() { fchown = unix.Fchown }()
		countFsids(t, &asked)
		for name, create := range creations(d, p) {
			if err := create(); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
		}
		if asked != 0 {
			t.Errorf("a chown or setfsuid asked %d times in a dir root owns", asked)
		}
	})
}

// A directory made as root in another user's directory is theirs from
// its creation (made with their file-system ids), and its bits are given
// through the one inode opened at its name, only if it is still theirs:
// a directory of root's, setgid and lacking its owner's bits, that the
// parent's owner swaps in at the name before the chmod keeps its owner
// and its mode (the mkdir fails, ErrReplaced), where by name it was given
// the new directory's mode, or, before it was made as theirs, given to
// them. One the owner may not make
// (its dir without the owner's write bit) is made as root.
func TestADirMadeAsItsOwnerGivesNothingAwayByName(t *testing.T) {
	needRoot(t)
	if !givesAway {
		t.Skip("this system makes no directory as another user")
	}
	d, p := tempDir(t)
	if err := os.Chown(p, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	loot := filepath.Join(p, "roots")
	if err := os.Mkdir(loot, 0o700); err != nil {
		t.Fatal(err)
	}
	// Lacking its owner's bits, so that a chmod would be made of it.
	if err := unix.Chmod(loot, 0o2055); err != nil {
		t.Fatal(err)
	}
	testHookAfterMkdir = func(name string) {
		// The parent's owner, between the mkdir and the chmod.
		os.Rename(filepath.Join(p, name), filepath.Join(p, "made"))
		os.Rename(loot, filepath.Join(p, name))
	}
	defer func() { testHookAfterMkdir = nil }()
	withUmask(t, 0o777, func() {
		if _, err := MkdirNew(d, "key", 0o700); !errors.Is(err, ErrReplaced) {
			t.Errorf("a directory swapped for root's: %v, want ErrReplaced", err)
		}
	})
	var st unix.Stat_t
	if err := unix.Lstat(filepath.Join(p, "key"), &st); err != nil || st.Uid != 0 || st.Mode&0o7777 != 0o2055 {
		t.Errorf("root's dir swapped in at the new name: uid %d, mode %04o, %v; want root's, 02055", st.Uid, st.Mode&0o7777, err)
	}
	if uid, _ := ownerOf(t, filepath.Join(p, "made")); uid != nobody {
		t.Errorf("the dir sessdb made is uid %d's, not its parent's owner's", uid)
	}
	testHookAfterMkdir = nil
	if err := os.Chmod(p, 0o500); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(p, 0o700)
	if made, err := MkdirNew(d, "unwritable", 0o700); err != nil || !made {
		t.Fatalf("in a dir its owner may not write: made %v, %v", made, err)
	}
	if uid, _ := ownerOf(t, filepath.Join(p, "unwritable")); uid != 0 {
		t.Errorf("made in a dir its owner may not write, it is uid %d's", uid)
	}
}

// No goroutine runs with another user's file-system ids: files made in a
// directory root owns, beside directories made as their owner many times
// over, are all root's.
func TestNoThreadKeepsTheOwnersIds(t *testing.T) {
	needRoot(t)
	d, p := tempDir(t)
	if err := os.Chown(p, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	mine, mp := tempDir(t)
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			for j := range 50 {
				if _, err := MkdirNew(d, fmt.Sprintf("d%d-%d", i, j), 0o700); err != nil {
					t.Error(err)
				}
				if err := unix.Mkdirat(int(mine.Fd()), fmt.Sprintf("m%d-%d", i, j), 0o700); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	entries, err := os.ReadDir(mp)
	if err != nil || len(entries) != 200 {
		t.Fatalf("%d entries, %v", len(entries), err)
	}
	for _, e := range entries {
		if uid, _ := ownerOf(t, filepath.Join(mp, e.Name())); uid != 0 {
			t.Errorf("%s, made by root in its own dir, is uid %d's", e.Name(), uid)
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
		if parent, base := SplitLast(tc.path); parent != tc.parent || base != tc.base {
			t.Errorf("SplitLast(%q) = %q, %q; want %q, %q", tc.path, parent, base, tc.parent, tc.base)
		}
	}
}

// JoinUncleaned keeps a ".." after a link where the system reads it, and
// drops only the trailing slashes of the path it joins under.
func TestJoinUncleaned(t *testing.T) {
	for _, tc := range []struct{ path, name, want string }{
		{"a/link/..", "b", "a/link/../b"},
		{"a/link/../", "session/current.jsonl", "a/link/../session/current.jsonl"},
		{"/", "b", "/b"},
		{".", "b", "./b"},
		{"a//", "b", "a/b"},
	} {
		if got := JoinUncleaned(tc.path, tc.name); got != tc.want {
			t.Errorf("JoinUncleaned(%q, %q) = %q; want %q", tc.path, tc.name, got, tc.want)
		}
	}
}
