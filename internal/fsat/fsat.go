// Package fsat opens, stats, renames and removes names relative to a
// directory descriptor with the *at system calls, one path component at a
// time, so that nothing below a directory the caller opened is ever
// resolved through a link, and a FIFO never blocks an open.
//
// os.Root is not enough for this: it follows a link that stays inside the
// root even when O_NOFOLLOW is passed, for files and for OpenRoot of a
// subdirectory (measured on Go 1.26).
package fsat

import (
	"errors"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// ErrNotDir is returned when a name that must be a real directory is a
// link or something else.
var ErrNotDir = errors.New("not a real directory")

// openDir opens path (absolute, or relative to the working directory) as a
// directory. The sessions root and a job dir are the operator's and the
// host's own paths, so a link there is followed; names below them are not.
func OpenDir(path string) (*os.File, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return os.NewFile(uintptr(fd), path), nil
}

// openDirAt opens name inside dir as a directory without following a link.
// A link or a non-directory at name is ErrNotDir.
func OpenDirAt(dir *os.File, name string) (*os.File, error) {
	fd, err := retry(func() (int, error) {
		return unix.Openat(int(dir.Fd()), name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	})
	if err != nil {
		if err == unix.ELOOP || err == unix.ENOTDIR {
			err = ErrNotDir
		}
		return nil, &os.PathError{Op: "open", Path: Join(dir, name), Err: err}
	}
	return os.NewFile(uintptr(fd), Join(dir, name)), nil
}

// openAt opens name inside dir without following a link and without
// blocking on a FIFO; the caller decides on fstat what it got.
func OpenAt(dir *os.File, name string, flags int, perm uint32) (*os.File, error) {
	fd, err := retry(func() (int, error) {
		return unix.Openat(int(dir.Fd()), name, flags|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, perm)
	})
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: Join(dir, name), Err: err}
	}
	return os.NewFile(uintptr(fd), Join(dir, name)), nil
}

func MkdirAt(dir *os.File, name string, perm uint32) error {
	if err := unix.Mkdirat(int(dir.Fd()), name, perm); err != nil && err != unix.EEXIST {
		return &os.PathError{Op: "mkdir", Path: Join(dir, name), Err: err}
	}
	return nil
}

// mkdirNew is mkdirAt that also says whether it made the directory.
func MkdirNew(dir *os.File, name string, perm uint32) (bool, error) {
	err := unix.Mkdirat(int(dir.Fd()), name, perm)
	switch err {
	case nil:
		return true, nil
	case unix.EEXIST:
		return false, nil
	}
	return false, &os.PathError{Op: "mkdir", Path: Join(dir, name), Err: err}
}

func RenameAt(dir *os.File, from, to string) error {
	if err := unix.Renameat(int(dir.Fd()), from, int(dir.Fd()), to); err != nil {
		return &os.LinkError{Op: "rename", Old: Join(dir, from), New: Join(dir, to), Err: err}
	}
	return nil
}

func UnlinkAt(dir *os.File, name string) error {
	if err := unix.Unlinkat(int(dir.Fd()), name, 0); err != nil {
		return &os.PathError{Op: "unlink", Path: Join(dir, name), Err: err}
	}
	return nil
}

func RmdirAt(dir *os.File, name string) error {
	if err := unix.Unlinkat(int(dir.Fd()), name, unix.AT_REMOVEDIR); err != nil {
		return &os.PathError{Op: "rmdir", Path: Join(dir, name), Err: err}
	}
	return nil
}

// lstatAt is lstat of a single name inside dir.
func LstatAt(dir *os.File, name string) (unix.Stat_t, error) {
	var st unix.Stat_t
	if err := unix.Fstatat(int(dir.Fd()), name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return st, &os.PathError{Op: "lstat", Path: Join(dir, name), Err: err}
	}
	return st, nil
}

func Fstat(f *os.File) (unix.Stat_t, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return st, &os.PathError{Op: "fstat", Path: f.Name(), Err: err}
	}
	return st, nil
}

// syncDir makes the directory entries created, renamed or removed in dir
// durable; a rename is not durable until its directory is.
func SyncDir(dir *os.File) error {
	if err := dir.Sync(); err != nil {
		return &os.PathError{Op: "fsync", Path: dir.Name(), Err: err}
	}
	return nil
}

// readDirNames lists dir's entries without following anything; it reads
// from a duplicate descriptor so that dir's own offset stays untouched.
func ReadDirNames(dir *os.File) ([]string, error) {
	d, err := OpenDirAt(dir, ".")
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return d.Readdirnames(-1)
}

func IsRegular(st *unix.Stat_t) bool { return st.Mode&unix.S_IFMT == unix.S_IFREG }
func IsDir(st *unix.Stat_t) bool     { return st.Mode&unix.S_IFMT == unix.S_IFDIR }

func Join(dir *os.File, name string) string {
	if name == "." {
		return dir.Name()
	}
	return dir.Name() + "/" + name
}

func IsNotExist(err error) bool { return errors.Is(err, unix.ENOENT) }

// retry repeats an open interrupted by a signal: an open of a FIFO or a
// slow filesystem can return EINTR.
func retry(f func() (int, error)) (int, error) {
	for {
		fd, err := f()
		if err != unix.EINTR {
			return fd, err
		}
	}
}

// ErrNotRegular is returned by ReadSmallFile when the name is a link, a
// FIFO, a directory, a device or a socket.
var ErrNotRegular = errors.New("not a regular file")

// ErrTooLarge is returned by ReadSmallFile when the file holds more than
// the bytes allowed.
var ErrTooLarge = errors.New("file too large")

// ReadSmallFile is like os.ReadFile, but it reads name inside dir without
// following a link or blocking on a FIFO, refuses anything but a regular
// file (judged on fstat of what was opened), and reads at most max bytes:
// a file that holds more is ErrTooLarge, however large it claims to be.
func ReadSmallFile(dir *os.File, name string, max int) ([]byte, error) {
	f, err := OpenAt(dir, name, unix.O_RDONLY, 0)
	if err != nil {
		if errors.Is(err, unix.ELOOP) {
			err = &os.PathError{Op: "open", Path: Join(dir, name), Err: ErrNotRegular}
		}
		return nil, err
	}
	defer f.Close()
	st, err := Fstat(f)
	if err != nil {
		return nil, err
	}
	if !IsRegular(&st) {
		return nil, &os.PathError{Op: "read", Path: f.Name(), Err: ErrNotRegular}
	}
	if st.Size > int64(max) {
		return nil, &os.PathError{Op: "read", Path: f.Name(), Err: ErrTooLarge}
	}
	// The size is only a hint: the file can grow between the fstat and
	// the read, so the read itself is capped too.
	b := make([]byte, max+1)
	n := 0
	for n < len(b) {
		m, err := f.ReadAt(b[n:], int64(n))
		n += m
		if err != nil {
			if err == io.EOF {
				break
			}
			return nil, &os.PathError{Op: "read", Path: f.Name(), Err: err}
		}
	}
	if n > max {
		return nil, &os.PathError{Op: "read", Path: f.Name(), Err: ErrTooLarge}
	}
	return b[:n], nil
}
