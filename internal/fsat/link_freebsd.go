package fsat

import "golang.org/x/sys/unix"

// linkErrno turns FreeBSD's EMLINK, its answer to an open with O_NOFOLLOW
// that met a link (open(2)), into the ELOOP the other systems give, so
// that callers test one errno.
func linkErrno(err error) error {
	if err == unix.EMLINK {
		return unix.ELOOP
	}
	return err
}
