package migrate

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// These helpers work from a directory descriptor and one path component,
// like the store's own (unexported) ones: nothing under a key dir is ever
// resolved through a link, and a FIFO never blocks an open. os.Root would
// follow a link that stays inside the root even with O_NOFOLLOW (measured
// on Go 1.26, DESIGN.md), so the *at calls are used directly.

// errNotDir is returned when a key dir is a link or not a directory.
var errNotDir = errors.New("not a real directory")

// openRoot opens the sessions root. It is the operator's own path, so a
// link there is followed; names below it are not.
func openRoot(path string) (*os.File, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return os.NewFile(uintptr(fd), path), nil
}

// openDirAt opens name inside dir as a directory without following a link;
// a link or a non-directory is errNotDir.
func openDirAt(dir *os.File, name string) (*os.File, error) {
	fd, err := retry(func() (int, error) {
		return unix.Openat(int(dir.Fd()), name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	})
	if err != nil {
		if err == unix.ELOOP || err == unix.ENOTDIR {
			err = errNotDir
		}
		return nil, &os.PathError{Op: "open", Path: join(dir, name), Err: err}
	}
	return os.NewFile(uintptr(fd), join(dir, name)), nil
}

// openFileAt opens name inside dir with O_NOFOLLOW|O_NONBLOCK and returns
// the raw descriptor and its fstat; the caller decides on the fstat what it
// got, and closes fd.
func openFileAt(dir *os.File, name string, flags int, perm uint32) (int, unix.Stat_t, error) {
	var st unix.Stat_t
	fd, err := retry(func() (int, error) {
		return unix.Openat(int(dir.Fd()), name, flags|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, perm)
	})
	if err != nil {
		return -1, st, &os.PathError{Op: "open", Path: join(dir, name), Err: err}
	}
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, st, &os.PathError{Op: "fstat", Path: join(dir, name), Err: err}
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

func lstatAt(dir *os.File, name string) (unix.Stat_t, error) {
	var st unix.Stat_t
	if err := unix.Fstatat(int(dir.Fd()), name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return st, &os.PathError{Op: "lstat", Path: join(dir, name), Err: err}
	}
	return st, nil
}

// removeAt removes name inside dir, the link itself if it is one. An empty
// directory is removed too; ENOENT is not an error (a re-run, or a rival,
// got there first).
func removeAt(dir *os.File, name string) error {
	err := unix.Unlinkat(int(dir.Fd()), name, 0)
	if err == unix.EISDIR || err == unix.EPERM {
		if st, serr := lstatAt(dir, name); serr == nil && isDir(&st) {
			err = unix.Unlinkat(int(dir.Fd()), name, unix.AT_REMOVEDIR)
		}
	}
	if err != nil && err != unix.ENOENT {
		return &os.PathError{Op: "remove", Path: join(dir, name), Err: err}
	}
	return nil
}

func renameAt(dir *os.File, from, to string) error {
	if err := unix.Renameat(int(dir.Fd()), from, int(dir.Fd()), to); err != nil {
		return &os.LinkError{Op: "rename", Old: join(dir, from), New: join(dir, to), Err: err}
	}
	return nil
}

// syncDir makes the entries created, renamed or removed in dir durable.
func syncDir(dir *os.File) error {
	if err := dir.Sync(); err != nil {
		return &os.PathError{Op: "fsync", Path: dir.Name(), Err: err}
	}
	return nil
}

// readDirNames lists dir through a second descriptor, so dir's own offset
// is untouched.
func readDirNames(dir *os.File) ([]string, error) {
	d, err := openDirAt(dir, ".")
	if err != nil {
		return nil, err
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil, &os.PathError{Op: "readdir", Path: dir.Name(), Err: err}
	}
	return names, nil
}

func retry(f func() (int, error)) (int, error) {
	for {
		fd, err := f()
		if err != unix.EINTR {
			return fd, err
		}
	}
}

func isRegular(st *unix.Stat_t) bool { return st.Mode&unix.S_IFMT == unix.S_IFREG }
func isDir(st *unix.Stat_t) bool     { return st.Mode&unix.S_IFMT == unix.S_IFDIR }

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

func join(dir *os.File, name string) string {
	if name == "." {
		return dir.Name()
	}
	return dir.Name() + "/" + name
}
