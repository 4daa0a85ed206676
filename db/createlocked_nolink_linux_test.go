package db

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// A file system that makes an unnamed file and cannot link it (a FUSE
// daemon that works by path: go-fuse's loopback refuses the link with
// EXDEV; one without hard links, EPERM) gets its files made by name, and
// locked: every key's first promotion and every migration failed there
// ("create …/meta.db: .meta.db.tmp-…: invalid cross-device link"). A name
// already taken is still refused, and no descriptor is left open.
func TestAnUnnamedFileTheFileSystemCannotLinkIsMadeByName(t *testing.T) {
	defer func(l func(fd, dirfd int, name string) error) { linkUnnamed = l }(linkUnnamed)
	for _, refusal := range []unix.Errno{unix.EXDEV, unix.EPERM, unix.EOPNOTSUPP, unix.ENOENT} {
		linkUnnamed = func(int, int, string) error { return refusal }
		kd := newKeyDir(t)
		tmp := tempName()
		before := fdCount(t)
		fd, err := createLocked(int(kd.dir.Fd()), tmp)
		if err != nil {
			t.Fatalf("link refused with %v: createLocked = %v; want the file made by name", refusal, err)
		}
		other, err := os.Open(filepath.Join(kd.path, tmp))
		if err != nil {
			t.Fatalf("link refused with %v: the file is not at its name: %v", refusal, err)
		}
		if err := unix.Flock(int(other.Fd()), unix.LOCK_SH|unix.LOCK_NB); err != unix.EWOULDBLOCK {
			t.Errorf("link refused with %v: another open's flock = %v, want it held (EWOULDBLOCK)", refusal, err)
		}
		other.Close()
		unix.Close(fd)
		if after := fdCount(t); after != before {
			t.Errorf("link refused with %v: %d descriptors open after, %d before", refusal, after, before)
		}

		// A name already taken: refused, by the named create as by the link.
		if fd, err := createLocked(int(kd.dir.Fd()), tmp); !errors.Is(err, unix.EEXIST) {
			if err == nil {
				unix.Close(fd)
			}
			t.Errorf("link refused with %v, over a taken name: %v; want EEXIST", refusal, err)
		}
	}

	// The user's view: a writer's open makes meta.db, and it opens again.
	linkUnnamed = func(int, int, string) error { return unix.EXDEV }
	kd := newKeyDir(t)
	d, err := OpenWriter(kd.dir, kd.db, testOpts)
	if err != nil {
		t.Fatalf("a writer's open that creates meta.db where the link is refused: %v", err)
	}
	d.Close()
	if d, err = OpenWriter(kd.dir, kd.db, testOpts); err != nil {
		t.Fatalf("meta.db made by name does not open again: %v", err)
	}
	d.Close()
}

// madeByName says why a meta.db made in dir is named before its flock
// (createThenLock), or "" where it is made unnamed: dir's file system
// has no O_TMPFILE, or cannot link the file it makes (FUSE).
func madeByName(dir string) string {
	fd, err := unix.Open(dir, unix.O_RDWR|unix.O_TMPFILE|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return "no O_TMPFILE here (" + err.Error() + ")"
	}
	defer unix.Close(fd)
	name := filepath.Join(dir, ".unnamed-probe")
	if err := linkUnnamed(fd, unix.AT_FDCWD, name); err != nil {
		return "this file system cannot link an unnamed file (" + err.Error() + ")"
	}
	os.Remove(name)
	return ""
}
