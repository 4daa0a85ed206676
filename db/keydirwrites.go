package db

import (
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"sessdb/internal/durable/dbseam"
)

// keyDirWrites makes create's and ownFile's writes in the key dir dirfd
// that bbolt does not make: the system calls themselves, or, when a
// power-cut test has armed package dbseam, the same calls through its FS,
// which books what a power cut could still take back (the journal would
// otherwise take every one of them as durable at once, and a missing
// fsync here would go unseen).
type keyDirWrites struct {
	dirfd int
	fs    dbseam.FS // nil: production
	dir   *os.File  // for fs: a duplicate of dirfd, named as the key dir
}

// writesIn returns dirfd's writer; name is meta.db's path, as the caller
// shows it (the key dir's path and "/meta.db"). Its close is due.
func writesIn(dirfd int, name string) (keyDirWrites, error) {
	w := keyDirWrites{dirfd: dirfd, fs: dbseam.Armed()}
	if w.fs == nil {
		return w, nil
	}
	// A duplicate: an *os.File closes its descriptor, and dirfd is the
	// caller's.
	fd, err := unix.FcntlInt(uintptr(dirfd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return w, err
	}
	w.dir = os.NewFile(uintptr(fd), filepath.Dir(name))
	return w, nil
}

func (w keyDirWrites) close() {
	if w.dir != nil {
		w.dir.Close()
	}
}

// made tells the seam of tmp, f's name in the key dir, made by
// createLocked; owed: its data is durable only once syncFile has been
// called on f.
func (w keyDirWrites) made(tmp string, f *os.File, owed bool) error {
	if w.fs == nil {
		return nil
	}
	return w.fs.Made(w.dir, tmp, f, owed)
}

// handed tells the seam that f is bbolt's from here on.
func (w keyDirWrites) handed(f *os.File) {
	if w.fs != nil {
		w.fs.Handed(f)
	}
}

func (w keyDirWrites) syncFile(f *os.File) error {
	if w.fs == nil {
		return f.Sync()
	}
	return w.fs.SyncFile(f)
}

// link makes to a second name of from; an existing to is an error for
// which errors.Is(err, unix.EEXIST) holds.
func (w keyDirWrites) link(from, to string) error {
	if w.fs == nil {
		return unix.Linkat(w.dirfd, from, w.dirfd, to, 0)
	}
	return w.fs.Link(w.dir, from, to)
}

func (w keyDirWrites) unlink(name string) error {
	if w.fs == nil {
		return unix.Unlinkat(w.dirfd, name, 0)
	}
	return w.fs.Unlink(w.dir, name)
}

func (w keyDirWrites) rename(from, to string) error {
	if w.fs == nil {
		return unix.Renameat(w.dirfd, from, w.dirfd, to)
	}
	return w.fs.Rename(w.dir, from, to)
}

func (w keyDirWrites) syncDir() error {
	if w.fs == nil {
		return fsync(w.dirfd)
	}
	return w.fs.SyncDir(w.dir)
}
