package fsat

import (
	"golang.org/x/sys/unix"
)

// A sessions root belongs to one user: the store makes every key dir 0700
// and every file 0600, so a key only its owner can use. A sessdb run as
// root in a root another user owns (an operator's check --repair or
// migrate, a worker run as root once) would make keys owned by root, and
// every later resolve of them by the owner's workers fails. So, on Linux,
// what this package creates as root in a directory another user owns is
// that user's (and the directory's group's): a directory is made with
// the process's file-system ids set to theirs (setfsuid and setfsgid, on
// one locked thread), so that it is theirs from its creation and nothing
// is given away by name after it (its bits, where the umask took the
// owner's, go through the one inode opened at its name, only while it is
// its maker's: mode.go); a file is given away through the descriptor its
// exclusive create returned (fchown). Neither is a guarantee: a directory
// the owner may not write in (mode 0500) is made as root, and a file
// system that refuses the chown (an NFS export that squashes root)
// leaves the file as made, usable by its creator as before; check
// reports an owner that is not the root's. Elsewhere (macOS,
// FreeBSD: no setfsuid) root's creations stay root's. A process that is
// not root makes what it makes its own, as the system does.

// fchown is unix's; a variable so that a test can stand in for a file
// system that refuses a chown.
var fchown = unix.Fchown

// giveToDirOwner gives fd, a file the caller has just created in dirfd
// (st its fstat), the owner and group of dirfd when it runs as root on
// Linux and they differ; st is updated when the chown was made. A chown
// refused is left alone (see above).
func giveToDirOwner(dirfd, fd int, st *unix.Stat_t) {
	if !givesAway || unix.Geteuid() != 0 {
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
