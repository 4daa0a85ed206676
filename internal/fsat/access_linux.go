package fsat

import "golang.org/x/sys/unix"

// faccessat2 is unix's, a variable so that a test can stand in for a
// kernel without it (ENOSYS: before Linux 5.8) or a seccomp filter that
// refuses it (EPERM).
var faccessat2 = unix.Faccessat2

// accessAt is AccessAt's judgement: faccessat2, the kernel's own, which
// takes AT_EACCESS and AT_SYMLINK_NOFOLLOW. Where it answers ENOSYS or
// EPERM, x/sys's Faccessat judges the mode bits itself, blind to an
// ACL, a read-only mount and an immutable file, and to root's search of
// any dir; and EPERM is the kernel's own answer for a write to an
// immutable file. So the kernel is asked again with faccessat, which
// takes no flags and judges by the real ids: the effective ones, where
// the two are the same (sessdb is no set-id program). Only where they
// differ is x/sys's judgement taken.
func accessAt(dirfd int, name string, mode uint32) error {
	err := faccessat2(dirfd, name, mode, unix.AT_EACCESS|unix.AT_SYMLINK_NOFOLLOW)
	if err != unix.ENOSYS && err != unix.EPERM {
		return err
	}
	if unix.Getuid() != unix.Geteuid() || unix.Getgid() != unix.Getegid() {
		return unix.Faccessat(dirfd, name, mode, unix.AT_EACCESS|unix.AT_SYMLINK_NOFOLLOW)
	}
	return accessNoFollow(dirfd, name, mode, 0, unix.Faccessat)
}
