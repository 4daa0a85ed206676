package shared

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// statx is unix.Statx; a variable so that a test can stand in for a
// server that answers ESTALE while the client's cache still holds the
// dir's attributes, which no test can make without root.
var statx = unix.Statx

// askServer is a stat of dir the client may not answer from its cache:
// statx with AT_STATX_FORCE_SYNC, asking for the mode (an NFS client
// revalidates nothing for a mask without it). A kernel or a seccomp
// filter without statx (ENOSYS, EPERM) leaves the plain stat's answer.
func askServer(dir string) error {
	var st unix.Statx_t
	for {
		err := statx(unix.AT_FDCWD, dir, unix.AT_STATX_FORCE_SYNC, unix.STATX_TYPE|unix.STATX_MODE, &st)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case err == nil, errors.Is(err, unix.ENOSYS), errors.Is(err, unix.EPERM):
			return nil
		}
		return &os.PathError{Op: "statx", Path: dir, Err: err}
	}
}
