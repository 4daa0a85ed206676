package fsat

import "golang.org/x/sys/unix"

// renameExcl is renameatx_np with RENAME_EXCL (macOS 10.12 and later),
// its errno as it is.
func renameExcl(dirfd int, from, to string) error {
	return unix.RenameatxNp(dirfd, from, dirfd, to, unix.RENAME_EXCL)
}

// renameNoReplace is renameExcl; a filesystem that does not support it
// says ENOTSUP or EINVAL.
func renameNoReplace(dirfd int, from, to string) error {
	err := renameExcl(dirfd, from, to)
	if err == unix.ENOTSUP || err == unix.EINVAL || err == unix.ENOSYS {
		return errNoAtomic
	}
	return err
}
