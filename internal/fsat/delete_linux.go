package fsat

import "golang.org/x/sys/unix"

// attrsAt reports whether dirfd's entry name ("": dirfd itself) is
// immutable or append-only, never following a link (statx's attributes:
// where the file system does not say, neither).
func attrsAt(dirfd int, name string) (immutable, appendOnly bool, err error) {
	flags := unix.AT_SYMLINK_NOFOLLOW
	if name == "" {
		flags |= unix.AT_EMPTY_PATH
	}
	var stx unix.Statx_t
	if _, err := IgnoringEINTR(func() (struct{}, error) {
		return struct{}{}, unix.Statx(dirfd, name, flags, 0, &stx)
	}); err != nil {
		if err == unix.ENOSYS {
			return false, false, nil // before Linux 4.11: not told
		}
		return false, false, err
	}
	known := stx.Attributes_mask & stx.Attributes
	return known&unix.STATX_ATTR_IMMUTABLE != 0, known&unix.STATX_ATTR_APPEND != 0, nil
}
