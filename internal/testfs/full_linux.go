package testfs

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// SmallFS mounts a tmpfs of size bytes on dir (an empty directory of the
// calling test's) and returns its unmount: a filesystem that fills, so
// that a write fails with ENOSPC as on a full disk. It needs privilege
// (CAP_SYS_ADMIN); an error means none here, and callers skip.
func SmallFS(dir string, size int) (unmount func(), err error) {
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, fmt.Sprintf("size=%d,mode=0700", size)); err != nil {
		return nil, &os.PathError{Op: "mount tmpfs", Path: dir, Err: err}
	}
	return func() { unix.Unmount(dir, unix.MNT_DETACH) }, nil
}
