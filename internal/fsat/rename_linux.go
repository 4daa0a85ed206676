package fsat

import "golang.org/x/sys/unix"

// renameExcl is renameat2 with RENAME_NOREPLACE, its errno as it is.
func renameExcl(dirfd int, from, to string) error {
	return renameat2(dirfd, from, dirfd, to, unix.RENAME_NOREPLACE)
}

// renameNoReplace is renameExcl; a filesystem that does not support the
// flag says EINVAL.
func renameNoReplace(dirfd int, from, to string) error {
	err := renameExcl(dirfd, from, to)
	if err == unix.EINVAL || err == unix.ENOSYS {
		return errNoAtomic
	}
	return err
}

// renameat2 is unix.Renameat2; a variable so that a test can stand in for
// a filesystem that refuses the flag (NFS), which no test can mount.
var renameat2 = unix.Renameat2
