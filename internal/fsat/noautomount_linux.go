package fsat

import "golang.org/x/sys/unix"

// autofsMagic is autofs's f_type (AUTOFS_SUPER_MAGIC).
const autofsMagic = 0x0187

// lstatFlags look at a name without following it or mounting it.
const lstatFlags = unix.AT_SYMLINK_NOFOLLOW | unix.AT_NO_AUTOMOUNT

// walkStartFlags open where a walk begins.
const walkStartFlags = unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC

// openDirNoCross opens the directory name in dir as a path alone, a link
// not followed: with no directory intent, an automount trigger there is
// not mounted (the walk's next step finds it autofs).
func openDirNoCross(dir int, name string) (int, error) {
	return IgnoringEINTR(func() (int, error) {
		return unix.Openat(dir, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	})
}

// onAutofs reports whether fd is on autofs.
func onAutofs(fd int) bool {
	var s unix.Statfs_t
	return unix.Fstatfs(fd, &s) == nil && s.Type == autofsMagic
}
