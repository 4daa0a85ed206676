package store

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// These helpers work from a directory descriptor and a single path
// component, so that no name under a key dir is ever resolved through a
// link. os.Root is not enough here: it follows a link that stays inside the
// root even when O_NOFOLLOW is passed (measured on Go 1.26, DESIGN.md).

// errNotDir is returned when a name that must be a real directory is a
// link or something else.
var errNotDir = errors.New("not a real directory")

// openDir opens path (absolute, or relative to the working directory) as a
// directory. The sessions root and a job dir are the operator's and the
// host's own paths, so a link there is followed; names below them are not.
func openDir(path string) (*os.File, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return os.NewFile(uintptr(fd), path), nil
}

// openDirAt opens name inside dir as a directory without following a link.
// A link or a non-directory at name is errNotDir.
func openDirAt(dir *os.File, name string) (*os.File, error) {
	fd, err := unix.Openat(int(dir.Fd()), name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		if err == unix.ELOOP || err == unix.ENOTDIR {
			err = errNotDir
		}
		return nil, &os.PathError{Op: "open", Path: join(dir, name), Err: err}
	}
	return os.NewFile(uintptr(fd), join(dir, name)), nil
}

// openAt opens name inside dir without following a link and without
// blocking on a FIFO; the caller decides on fstat what it got.
func openAt(dir *os.File, name string, flags int, perm uint32) (*os.File, error) {
	fd, err := unix.Openat(int(dir.Fd()), name, flags|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, perm)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: join(dir, name), Err: err}
	}
	return os.NewFile(uintptr(fd), join(dir, name)), nil
}

func mkdirAt(dir *os.File, name string, perm uint32) error {
	if err := unix.Mkdirat(int(dir.Fd()), name, perm); err != nil && err != unix.EEXIST {
		return &os.PathError{Op: "mkdir", Path: join(dir, name), Err: err}
	}
	return nil
}

// mkdirNew is mkdirAt that also says whether it made the directory.
func mkdirNew(dir *os.File, name string, perm uint32) (bool, error) {
	err := unix.Mkdirat(int(dir.Fd()), name, perm)
	switch err {
	case nil:
		return true, nil
	case unix.EEXIST:
		return false, nil
	}
	return false, &os.PathError{Op: "mkdir", Path: join(dir, name), Err: err}
}

func renameAt(dir *os.File, from, to string) error {
	if err := unix.Renameat(int(dir.Fd()), from, int(dir.Fd()), to); err != nil {
		return &os.LinkError{Op: "rename", Old: join(dir, from), New: join(dir, to), Err: err}
	}
	return nil
}

func unlinkAt(dir *os.File, name string) error {
	if err := unix.Unlinkat(int(dir.Fd()), name, 0); err != nil {
		return &os.PathError{Op: "unlink", Path: join(dir, name), Err: err}
	}
	return nil
}

func rmdirAt(dir *os.File, name string) error {
	if err := unix.Unlinkat(int(dir.Fd()), name, unix.AT_REMOVEDIR); err != nil {
		return &os.PathError{Op: "rmdir", Path: join(dir, name), Err: err}
	}
	return nil
}

// lstatAt is lstat of a single name inside dir.
func lstatAt(dir *os.File, name string) (unix.Stat_t, error) {
	var st unix.Stat_t
	if err := unix.Fstatat(int(dir.Fd()), name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return st, &os.PathError{Op: "lstat", Path: join(dir, name), Err: err}
	}
	return st, nil
}

func fstat(f *os.File) (unix.Stat_t, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return st, &os.PathError{Op: "fstat", Path: f.Name(), Err: err}
	}
	return st, nil
}

// syncDir makes the directory entries created, renamed or removed in dir
// durable; a rename is not durable until its directory is.
func syncDir(dir *os.File) error {
	if err := dir.Sync(); err != nil {
		return &os.PathError{Op: "fsync", Path: dir.Name(), Err: err}
	}
	return nil
}

// readDirNames lists dir's entries without following anything; it reads
// from a duplicate descriptor so that dir's own offset stays untouched.
func readDirNames(dir *os.File) ([]string, error) {
	d, err := openDirAt(dir, ".")
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return d.Readdirnames(-1)
}

func isRegular(st *unix.Stat_t) bool { return st.Mode&unix.S_IFMT == unix.S_IFREG }
func isDir(st *unix.Stat_t) bool     { return st.Mode&unix.S_IFMT == unix.S_IFDIR }

func join(dir *os.File, name string) string {
	if name == "." {
		return dir.Name()
	}
	return dir.Name() + "/" + name
}

func isNotExist(err error) bool { return errors.Is(err, unix.ENOENT) }
