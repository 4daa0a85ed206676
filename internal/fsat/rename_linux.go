package fsat

import "golang.org/x/sys/unix"

// renameNoReplace is renameat2 with RENAME_NOREPLACE; a filesystem that
// does not support the flag says EINVAL.
func renameNoReplace(dirfd int, from, to string) error {
	err := renameat2(dirfd, from, dirfd, to, unix.RENAME_NOREPLACE)
	if err == unix.EINVAL || err == unix.ENOSYS {
		return errNoAtomic
	}
	return err
}

// renameat2 is unix.Renameat2; a variable so that a test can stand in for
// a filesystem that refuses the flag (NFS), which no test can mount.
var renameat2 = unix.Renameat2
