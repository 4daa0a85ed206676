package db

import (
	"context"
	"fmt"
	"time"

	"golang.org/x/sys/unix"

	"sessdb/internal/fsat"
)

// createLocked makes a new file at name in dirfd (failing if anything is
// there) and returns it open for writing with its flock held, taken
// before the name exists: a check or a repair that finds the name finds it
// locked, never a creation in flight that looks like debris. The file is
// made unnamed (O_TMPFILE), locked, then linked to name through /proc;
// where either is missing (a file system without O_TMPFILE, NFS among
// them, or no /proc), or the file system makes an unnamed file and cannot
// link it, it is made at name and locked right after, the window this
// closes elsewhere.
func createLocked(dirfd int, name string) (int, error) {
	return createLockedBy(dirfd, name, time.Now().Add(time.Second))
}

// createLockedBy is createLocked whose fallback waits for the flock no
// later than deadline (createThenLockBy).
func createLockedBy(dirfd int, name string, deadline time.Time) (int, error) {
	if testHookNoTmpfile {
		return createThenLockBy(dirfd, name, deadline)
	}
	fd, err := openat(dirfd, ".", unix.O_RDWR|unix.O_TMPFILE|unix.O_CLOEXEC, 0o600)
	switch err {
	case nil:
	case unix.EOPNOTSUPP, unix.EISDIR, unix.EINVAL:
		return createThenLockBy(dirfd, name, deadline)
	case unix.EPERM:
		// Linux refuses an unnamed file in a directory already removed
		// with EPERM, where a named create gets ENOENT: a key dir a reap
		// removed under a waiting writer read as a permission problem.
		if removed(dirfd) {
			return -1, unix.ENOENT
		}
		return -1, err
	default:
		return -1, err
	}
	// Nobody else can open an unnamed file: had at once (flockUntil for
	// its EINTR retries).
	if err := flockUntil(context.Background(), fd, true, time.Now()); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("flock: %w", err)
	}
	if err := fsat.Created(dirfd, fd, 0o600, name); err != nil {
		unix.Close(fd)
		return -1, err
	}
	_, err = fsat.IgnoringEINTR(func() (struct{}, error) {
		return struct{}{}, linkUnnamed(fd, dirfd, name)
	})
	if err == nil {
		if testHookCreateStep != nil {
			testHookCreateStep("named")
		}
		return fd, nil
	}
	unix.Close(fd)
	if err == unix.EEXIST {
		return -1, err
	}
	// Not linked: no /proc (ENOENT); or a file system that makes an
	// unnamed file and cannot name it: a FUSE daemon that works by path
	// has none to link it from (go-fuse's loopback says EXDEV), and one
	// that makes no hard links says EPERM. Every first promotion and
	// migration failed there. Made by name instead; a removed dir, or a
	// real fault (a full disk), fails that create as it failed the link.
	return createThenLockBy(dirfd, name, deadline)
}

// linkUnnamed links the unnamed file fd to name in dirfd; a variable so
// that a test can stand in for a file system that refuses it.
var linkUnnamed = func(fd, dirfd int, name string) error {
	return unix.Linkat(unix.AT_FDCWD, fmt.Sprintf("/proc/self/fd/%d", fd), dirfd, name, unix.AT_SYMLINK_FOLLOW)
}

// removed reports whether dirfd's directory has been removed (no link
// left to it).
func removed(dirfd int) bool {
	var st unix.Stat_t
	return unix.Fstat(dirfd, &st) == nil && st.Nlink == 0
}
