//go:build !freebsd

package fsat

// linkErrno is the errno of an open with O_NOFOLLOW that met a link: ELOOP
// already, on every system but FreeBSD.
func linkErrno(err error) error { return err }
