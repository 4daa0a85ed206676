//go:build !linux

package fsat

import (
	"bytes"

	"golang.org/x/sys/unix"
)

// lstatFlags look at a name without following it.
const lstatFlags = unix.AT_SYMLINK_NOFOLLOW

// walkStartFlags open where a walk begins.
const walkStartFlags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_CLOEXEC

// openDirNoCross opens the directory name in dir, a link not followed.
// Outside Linux the open of a direct map's trigger may mount it.
func openDirNoCross(dir int, name string) (int, error) {
	return IgnoringEINTR(func() (int, error) {
		return unix.Openat(dir, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	})
}

// onAutofs reports whether fd is on autofs.
func onAutofs(fd int) bool {
	var s unix.Statfs_t
	if unix.Fstatfs(fd, &s) != nil {
		return false
	}
	name, _, _ := bytes.Cut(s.Fstypename[:], []byte{0})
	return string(name) == "autofs"
}
