package testfs

import "golang.org/x/sys/unix"

// mknod passes FreeBSD's 64-bit dev_t as it is.
func mknod(path string, mode uint32, like *unix.Stat_t) error {
	return unix.Mknod(path, mode, like.Rdev)
}
