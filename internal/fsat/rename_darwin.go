package fsat

import "golang.org/x/sys/unix"

// renameNoReplace is renameatx_np with RENAME_EXCL (macOS 10.12 and
// later); a filesystem that does not support it says ENOTSUP or EINVAL.
func renameNoReplace(dirfd int, from, to string) error {
	err := unix.RenameatxNp(dirfd, from, dirfd, to, unix.RENAME_EXCL)
	if err == unix.ENOTSUP || err == unix.EINVAL || err == unix.ENOSYS {
		return errNoAtomic
	}
	return err
}
