package fsat

import (
	"strconv"

	"golang.org/x/sys/unix"
)

// openEntry opens name in dirfd for a chmod through the descriptor:
// O_PATH needs none of its bits, and opens a link or a FIFO as itself
// (fstat then says what it is), never what it leads to.
func openEntry(dirfd int, name string, dirOnly bool) (int, error) {
	flags := unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC
	if dirOnly {
		flags |= unix.O_DIRECTORY
	}
	return IgnoringEINTR(func() (int, error) { return unix.Openat(dirfd, name, flags, 0) })
}

// chmodEntry sets the mode of what fd, an O_PATH descriptor, is open on:
// fchmodat2 with AT_EMPTY_PATH (Linux 6.6 and later), else, where the
// kernel has no fchmodat2 or a seccomp filter refuses it, a chmod of the
// descriptor's own /proc/self/fd link, which leads to that inode whatever
// its name is now. Both need only the caller to own the file, or root.
func chmodEntry(fd int, mode uint32) error {
	err := fchmodat(fd, "", mode, unix.AT_EMPTY_PATH)
	if err == unix.EOPNOTSUPP || err == unix.ENOSYS || err == unix.EPERM || err == unix.EINVAL {
		err = chmodPath("/proc/self/fd/"+strconv.Itoa(fd), mode)
	}
	return err
}

// chmodPath is unix.Chmod; a variable so that a test can stand in for a
// file system that cannot chmod.
var chmodPath = unix.Chmod

// procSelfFD is where Linux shows the process's descriptors; a variable
// so that a test can stand in for a system without /proc.
var procSelfFD = "/proc/self/fd/"

// reopenFile opens for reading the regular file fd, an O_PATH descriptor,
// is open on, so that it can be fsynced: through the descriptor's own
// /proc/self/fd link, which leads to that inode whatever its name is now
// (as chmodEntry's fallback), else, without /proc, at name in dirfd
// (syncable checks that it is the same inode).
func reopenFile(fd, dirfd int, name string) (int, error) {
	nfd, err := IgnoringEINTR(func() (int, error) {
		return unix.Open(procSelfFD+strconv.Itoa(fd), unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	})
	if err == unix.ENOENT {
		return openAtNoFollow(dirfd, name)
	}
	return nfd, err
}
