//go:build !freebsd

package testfs

import "golang.org/x/sys/unix"

// mknod passes the device number as the int Linux's and macOS's mknod take.
func mknod(path string, mode uint32, like *unix.Stat_t) error {
	return unix.Mknod(path, mode, int(like.Rdev))
}
