//go:build !linux

package fsat

import "golang.org/x/sys/unix"

// openEntry opens name in dirfd for a chmod through the descriptor,
// without following a link or blocking on a FIFO. Without O_PATH the open
// needs the entry's read bit: a process that is not root cannot give a
// directory or file of its own back a read bit it lacks here.
func openEntry(dirfd int, name string, dirOnly bool) (int, error) {
	flags := unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_CLOEXEC | unix.O_NOCTTY
	if dirOnly {
		flags |= unix.O_DIRECTORY
	}
	fd, err := IgnoringEINTR(func() (int, error) { return unix.Openat(dirfd, name, flags, 0) })
	return fd, linkErrno(err)
}

// chmodEntry sets the mode of what fd is open on.
func chmodEntry(fd int, mode uint32) error { return fchmod(fd, mode) }

// reopenFile returns a second descriptor of the regular file fd is open
// on (openEntry opened it for reading: it can be fsynced), closed apart
// from fd.
func reopenFile(fd, _ int, _ string) (int, error) {
	return IgnoringEINTR(func() (int, error) { return unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0) })
}
