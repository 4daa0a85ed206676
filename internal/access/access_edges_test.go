package access

import (
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// A store's owner is its root's uid and its root's gid, each in its
// place: the gid is the group an entry is judged by for a user the
// system does not know, and the one check's advice tells the operator to
// chown to.
func TestOwnerOfIsTheRootsUIDAndItsGID(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("only root gives a dir a uid and a gid apart: run as root to test it")
	}
	p := t.TempDir()
	if err := os.Chown(p, 54321, 54322); err != nil {
		t.Fatal(err)
	}
	dir, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	if o, ok := OwnerOf(dir); !ok || o != (Owner{UID: 54321, GID: 54322}) {
		t.Fatalf("OwnerOf a dir of 54321:54322 = %+v, %v; want {UID:54321 GID:54322}, true", o, ok)
	}
}

// A root whose owner and mode cannot be told (its fstat fails) judges
// nothing: OwnerOf and DirLacks say so (ok false), where a made-up owner
// (root's, Owner{}) would judge nothing for the wrong reason and a
// made-up mode would report what is not there.
func TestARootThatCannotBeStattedIsNotJudged(t *testing.T) {
	dir, err := os.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	dir.Close() // its descriptor is gone: the fstat fails (EBADF)
	if o, ok := OwnerOf(dir); ok {
		t.Errorf("OwnerOf a dir that cannot be statted = %+v, true; want false", o)
	}
	if mode, lacks, ok := DirLacks(dir, 0o700); ok {
		t.Errorf("DirLacks of a dir that cannot be statted = %04o, %04o, true; want false", mode, lacks)
	}
}

// DirLacks gives the root's whole mode, its setgid bit too (a shared
// group's root is 2770), as check's finding shows it, and the owner's
// bits it lacks.
func TestDirLacksGivesTheWholeMode(t *testing.T) {
	dir := dirOfMode(t, 0o2550)
	mode, lacks, ok := DirLacks(dir, 0o700)
	want := uint32(0o200)
	if os.Geteuid() == 0 {
		want = 0 // root's own root: root may use anything
	}
	if !ok || mode != 0o2550 || lacks != want {
		t.Fatalf("DirLacks of a dir 02550 = %04o, %04o, %v; want 2550, %04o, true", mode, lacks, ok, want)
	}
}

// GiveBits says what it did, and, where it did nothing, why, and gives
// nothing it was not asked to: a name gone since it was found is "gone
// since it was found", a link at the name is left ("not the owner's
// directory or file"), an entry that has the bits now is left saying its
// mode, and an entry of another uid than the one asked for is left with
// its mode as it was. None is a repair done, and none is an error.
func TestGiveBitsSaysWhyItGaveNothing(t *testing.T) {
	p := t.TempDir()
	for name, mode := range map[string]os.FileMode{"whole": 0o600, "another's": 0o400, "target": 0o400} {
		if err := os.WriteFile(filepath.Join(p, name), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(filepath.Join(p, name), mode); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("target", filepath.Join(p, "link")); err != nil {
		t.Fatal(err)
	}
	dir, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	me := os.Geteuid()
	for _, c := range []struct {
		name, outcome string
		uid           int
		at            string
		mode          os.FileMode // at's mode after
	}{
		{"missing", "gone since it was found: nothing left to give bits to", -1, "", 0},
		{"link", "gone since it was found: what is at its name now is not the owner's directory or file", -1, "target", 0o400},
		{"whole", "gone since it was found: its mode is 0600 now", me, "whole", 0o600},
		{"another's", "gone since it was found: what is at its name now is not the owner's directory or file", me + 1, "another's", 0o400},
	} {
		outcome, done, err := GiveBits(nil, dir, c.name, 0o600, c.uid)
		if err != nil || done || !strings.HasPrefix(outcome, c.outcome) {
			t.Errorf("GiveBits of %s: %q, done %v, %v; want %q, not done, no error", c.name, outcome, done, err, c.outcome)
		}
		if c.at == "" {
			continue
		}
		if fi, err := os.Lstat(filepath.Join(p, c.at)); err != nil || fi.Mode().Perm() != c.mode {
			t.Errorf("GiveBits of %s: %s is mode %v, %v; want %v as it was", c.name, c.at, fi.Mode().Perm(), err, c.mode)
		}
	}
}

// GiveBits of "." gives dir itself the bits it lacks, through the
// descriptor, and says what the mode was and is.
func TestGiveBitsOfTheDirItself(t *testing.T) {
	dir := dirOfMode(t, 0o550)
	outcome, done, err := GiveBits(nil, dir, ".", 0o700, -1)
	if want := "gave its owner the bits it lacked: mode 0550, now 0750"; err != nil || !done || outcome != want {
		t.Fatalf("GiveBits of the dir itself: %q, done %v, %v; want %q, done", outcome, done, err, want)
	}
	if fi, err := os.Stat(dir.Name()); err != nil || fi.Mode().Perm() != 0o750 {
		t.Fatalf("the dir after GiveBits: %v, %v; want 0750", fi.Mode().Perm(), err)
	}
}

// An owner is in its supplementary groups as in its primary one: an
// entry root owns whose group's bits let one of its supplementary groups
// read and write it is no owner finding.
func TestAnOwnersSupplementaryGroupCounts(t *testing.T) {
	b, err := os.ReadFile("/etc/group")
	if err != nil {
		t.Skipf("no /etc/group to find a user with a supplementary group in (%v)", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Split(line, ":")
		if len(f) != 4 || f[3] == "" {
			continue
		}
		for _, name := range strings.Split(f[3], ",") {
			u, err := user.Lookup(name)
			if err != nil || u.Gid == f[2] {
				continue
			}
			uid, _ := strconv.ParseUint(u.Uid, 10, 32)
			gid, _ := strconv.ParseUint(u.Gid, 10, 32)
			group, _ := strconv.ParseUint(f[2], 10, 32)
			if uid == 0 {
				continue
			}
			if _, o := Judge(stat(0, uint32(group), 0o660), 0o600, &Owner{UID: uint32(uid), GID: uint32(gid)}); o != 0 {
				t.Fatalf("root's entry 0660 of group %s, a supplementary group of %s: lacks %04o; want 0 (the group's bits count)", f[0], name, o)
			}
			return
		}
	}
	t.Skip("no user here has a supplementary group other than its primary one")
}

// dirOfMode returns a new directory of mode (setgid included), open; the
// test's cleanup closes it and gives it its owner's bits back.
func dirOfMode(t *testing.T, mode uint32) *os.File {
	t.Helper()
	p := t.TempDir()
	if err := unix.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(p, 0o700) })
	dir, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dir.Close() })
	return dir
}
