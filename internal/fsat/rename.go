package fsat

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// RenameNoReplace is like RenameAt, but never replaces an existing to: if
// to exists, it fails with an error that unwraps to EEXIST and changes
// nothing. Both names are inside dir; the rename is durable once dir is
// synced. See the package doc for how it is done on each system, and the
// one caveat (the link-then-unlink fallback).
func RenameNoReplace(dir *os.File, from, to string) error {
	err := renameNoReplace(int(dir.Fd()), from, to)
	if err == errNoAtomic {
		err = linkThenUnlink(int(dir.Fd()), from, to)
	}
	if err != nil {
		return &os.LinkError{Op: "rename", Old: Join(dir, from), New: Join(dir, to), Err: err}
	}
	return nil
}

// RenameNoReplaceAtomic is RenameNoReplace without its fallback: the
// system's atomic no-replace rename alone (renameat2 RENAME_NOREPLACE,
// macOS's renameatx_np RENAME_EXCL), its errno as the system gave it.
// Where the file system or the system has none (an NFS or CephFS client
// says EINVAL, an older kernel ENOSYS, some FUSE EOPNOTSUPP, macOS ENOTSUP
// on a file system without it; FreeBSD ENOSYS here) it fails and changes
// nothing, for the caller to fall back as it sees fit.
func RenameNoReplaceAtomic(dir *os.File, from, to string) error {
	if err := renameExcl(int(dir.Fd()), from, to); err != nil {
		return &os.LinkError{Op: "rename", Old: Join(dir, from), New: Join(dir, to), Err: err}
	}
	return nil
}

// errNoAtomic says the system or filesystem has no rename that refuses to
// replace, so RenameNoReplace falls back to linkThenUnlink.
var errNoAtomic = errors.New("no atomic no-replace rename")

// linkThenUnlink is the no-replace rename of a system without one: link(2)
// refuses an existing name (EEXIST), and the old name goes after. A crash
// between the two leaves both names on the one file, never a replaced or a
// lost one.
func linkThenUnlink(dirfd int, from, to string) error {
	if err := unix.Linkat(dirfd, from, dirfd, to, 0); err != nil {
		return err
	}
	return unix.Unlinkat(dirfd, from, 0)
}
