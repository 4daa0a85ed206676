package durable

import "golang.org/x/sys/unix"

// renameNoReplaceAtomic is renameat2 with RENAME_NOREPLACE, its errno as
// it is.
func renameNoReplaceAtomic(dirfd int, from, to string) error {
	return unix.Renameat2(dirfd, from, dirfd, to, unix.RENAME_NOREPLACE)
}
