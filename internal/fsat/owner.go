package fsat

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// A sessions root belongs to one user: the store makes every key dir 0700
// and every file 0600, so a key only its owner can use. A sessdb run as
// root in a root another user owns (an operator's check --repair or
// migrate, a worker run as root once) would make keys owned by root, and
// every later resolve of them by the owner's workers fails. So a file or
// directory this package creates as root is given the owner (user and
// group) of the directory it is created in, through its own descriptor,
// never by name. That is best effort: a file system that refuses the
// chown (an NFS export that squashes root, some FUSE mounts) leaves the
// file as it was made, usable by its creator as before, and check reports
// an owner that is not the root's. A process that is not root makes what
// it makes its own, as the system does.

// ErrHardLinked is GiveAt's refusal of a file with more than one name:
// one of them may be outside the directory, and giving the file away
// would give that name's file too.
var ErrHardLinked = errors.New("a file with more than one name")

// fchown is unix's; a variable so that a test can stand in for a file
// system that refuses a chown.
var fchown = unix.Fchown

// giveToDirOwner gives fd, which the caller has just created in dirfd (st
// its fstat), the owner and group of dirfd when it runs as root and they
// differ; st is updated when the chown was made. A chown refused is left
// alone (see above).
func giveToDirOwner(dirfd, fd int, st *unix.Stat_t) {
	if unix.Geteuid() != 0 {
		return
	}
	var dst unix.Stat_t
	if _, err := IgnoringEINTR(func() (struct{}, error) { return struct{}{}, unix.Fstat(dirfd, &dst) }); err != nil {
		return
	}
	if dst.Uid == st.Uid && dst.Gid == st.Gid {
		return
	}
	if fchown(fd, int(dst.Uid), int(dst.Gid)) == nil {
		st.Uid, st.Gid = dst.Uid, dst.Gid
	}
}

// giveDirToDirOwner is giveToDirOwner for the directory name that the
// caller has just made in dirfd: it is opened without following a link,
// and given away through that descriptor (as root, a mode that lacks the
// owner's read bit is no bar to the open).
func giveDirToDirOwner(dirfd int, name string) {
	if unix.Geteuid() != 0 {
		return
	}
	fd, err := IgnoringEINTR(func() (int, error) {
		return unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|openFlags, 0)
	})
	if err != nil {
		return
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if _, err := IgnoringEINTR(func() (struct{}, error) { return struct{}{}, unix.Fstat(fd, &st) }); err == nil {
		giveToDirOwner(dirfd, fd, &st)
	}
}

// GiveAt gives dir's entry name, a directory or a regular file with one
// name, to uid and gid, without following a link, through a descriptor of
// what it opened; it returns the owner it had before. A link, a FIFO or
// anything else is left as it is, with no error (the caller's open
// refuses it), and a regular file with more than one name is
// ErrHardLinked. Only root may give a file away. It is how check --repair
// gives the root's owner back a key that sessdb made as root.
func GiveAt(dir *os.File, name string, uid, gid uint32) (beforeUID uint32, err error) {
	fd, err := openat(dir, name, unix.O_RDONLY|openFlags, 0)
	if err == unix.ELOOP || err == unix.ENXIO || err == unix.EOPNOTSUPP {
		return 0, nil // a link, a socket: not the store's to give
	}
	if err != nil {
		return 0, &os.PathError{Op: "open", Path: Join(dir, name), Err: err}
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if _, err := IgnoringEINTR(func() (struct{}, error) { return struct{}{}, unix.Fstat(fd, &st) }); err != nil {
		return 0, &os.PathError{Op: "fstat", Path: Join(dir, name), Err: err}
	}
	switch {
	case !IsDir(&st) && !IsRegular(&st), st.Uid == uid && st.Gid == gid:
		return st.Uid, nil
	case IsRegular(&st) && st.Nlink > 1:
		return st.Uid, &os.PathError{Op: "chown", Path: Join(dir, name), Err: ErrHardLinked}
	}
	if err := fchown(fd, int(uid), int(gid)); err != nil {
		return st.Uid, &os.PathError{Op: "chown", Path: Join(dir, name), Err: err}
	}
	return st.Uid, nil
}
