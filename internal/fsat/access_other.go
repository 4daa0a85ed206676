//go:build !linux

package fsat

import "golang.org/x/sys/unix"

// accessAt is AccessAt's judgement: faccessat with AT_EACCESS, the
// name's lstat first (neither FreeBSD nor older macOS takes
// AT_SYMLINK_NOFOLLOW there: EINVAL).
func accessAt(dirfd int, name string, mode uint32) error {
	return accessNoFollow(dirfd, name, mode, unix.AT_EACCESS, unix.Faccessat)
}
