//go:build !linux

package testfs

import (
	"os"

	"golang.org/x/sys/unix"
)

// SmallFS mounts a tmpfs, which is Linux's; elsewhere it is an error, and
// callers skip.
func SmallFS(dir string, size int) (unmount func(), err error) {
	return nil, &os.PathError{Op: "mount tmpfs", Path: dir, Err: unix.ENOTSUP}
}
