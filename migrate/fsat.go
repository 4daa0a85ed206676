package migrate

import (
	"os"

	"golang.org/x/sys/unix"

	"sessdb/internal/fsat"
)

// The helpers migration needs beyond package fsat: the raw descriptor and
// its fstat (a legacy sidecar is judged before it becomes an *os.File),
// removal of whatever sits at a legacy name, and file kinds for reports.

// openFileAt opens name inside dir with O_NOFOLLOW|O_NONBLOCK and returns
// the raw descriptor and its fstat; the caller decides on the fstat what it
// got, and closes fd.
func openFileAt(dir *os.File, name string, flags int, perm uint32) (int, unix.Stat_t, error) {
	var st unix.Stat_t
	fd, err := retry(func() (int, error) {
		return unix.Openat(int(dir.Fd()), name, flags|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, perm)
	})
	if err != nil {
		return -1, st, &os.PathError{Op: "open", Path: fsat.Join(dir, name), Err: err}
	}
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, st, &os.PathError{Op: "fstat", Path: fsat.Join(dir, name), Err: err}
	}
	return fd, st, nil
}

// regularFile turns a descriptor of a regular file into an *os.File.
// O_NONBLOCK was for the open of a FIFO; it is cleared so that os.NewFile
// does not try to register a regular file with the poller.
func regularFile(fd int, name string) (*os.File, error) {
	if err := unix.SetNonblock(fd, false); err != nil {
		unix.Close(fd)
		return nil, &os.PathError{Op: "fcntl", Path: name, Err: err}
	}
	return os.NewFile(uintptr(fd), name), nil
}

// removeAt removes name inside dir, the link itself if it is one. An empty
// directory is removed too; ENOENT is not an error (a re-run, or a rival,
// got there first).
func removeAt(dir *os.File, name string) error {
	err := unix.Unlinkat(int(dir.Fd()), name, 0)
	if err == unix.EISDIR || err == unix.EPERM {
		if st, serr := fsat.LstatAt(dir, name); serr == nil && fsat.IsDir(&st) {
			err = unix.Unlinkat(int(dir.Fd()), name, unix.AT_REMOVEDIR)
		}
	}
	if err != nil && err != unix.ENOENT {
		return &os.PathError{Op: "remove", Path: fsat.Join(dir, name), Err: err}
	}
	return nil
}

func retry(f func() (int, error)) (int, error) {
	for {
		fd, err := f()
		if err != unix.EINTR {
			return fd, err
		}
	}
}

// kindOf names a file type for reports.
func kindOf(st *unix.Stat_t) string {
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		return "regular file"
	case unix.S_IFLNK:
		return "symbolic link"
	case unix.S_IFDIR:
		return "directory"
	case unix.S_IFIFO:
		return "FIFO"
	case unix.S_IFSOCK:
		return "socket"
	}
	return "device"
}
