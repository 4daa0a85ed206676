//go:build !linux && !darwin

package fsat

import "golang.org/x/sys/unix"

// renameExcl has no system call here (FreeBSD's rename cannot refuse to
// replace).
func renameExcl(int, string, string) error { return unix.ENOSYS }

// renameNoReplace has no atomic form here: RenameNoReplace links, then
// unlinks.
func renameNoReplace(dirfd int, from, to string) error { return errNoAtomic }
