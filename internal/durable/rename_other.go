//go:build !linux

package durable

import "golang.org/x/sys/unix"

// renameNoReplaceAtomic: renameat2 is Linux's; elsewhere there is none
// here (fsat.RenameNoReplace has macOS's renamex_np, with its fallback).
func renameNoReplaceAtomic(int, string, string) error { return unix.ENOSYS }
