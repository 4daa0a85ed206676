package fsat

import (
	"errors"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// OpenRegularAt is like OpenAt for reading, but only a regular file is
// opened: name is lstat'ed first, and a link, a FIFO, a socket or a device
// is ErrNotRegular without being opened (the open of a device runs its
// driver); one swapped in since the lstat is ErrNotRegular too, from the
// open's errno (a link is ELOOP; a socket ENXIO on Linux, EOPNOTSUPP on
// macOS and FreeBSD) or because the fstat of what was opened is not the
// regular file the lstat saw. Nothing at the name is ENOENT, as from an
// open. It returns the file and its fstat.
func OpenRegularAt(dir *os.File, name string) (*os.File, unix.Stat_t, error) {
	notRegular := &os.PathError{Op: "open", Path: Join(dir, name), Err: ErrNotRegular}
	lst, err := IgnoringEINTR(func() (st unix.Stat_t, err error) {
		return st, unix.Fstatat(int(dir.Fd()), name, &st, unix.AT_SYMLINK_NOFOLLOW)
	})
	if err != nil {
		return nil, lst, &os.PathError{Op: "open", Path: Join(dir, name), Err: err}
	}
	if !IsRegular(&lst) {
		return nil, lst, notRegular
	}
	if testHookLstated != nil {
		testHookLstated()
	}
	fd, st, err := OpenRaw(dir, name, unix.O_RDONLY, 0)
	switch {
	case errors.Is(err, unix.ELOOP), errors.Is(err, unix.ENXIO), errors.Is(err, unix.EOPNOTSUPP):
		return nil, st, notRegular
	case err != nil:
		return nil, st, err
	case !IsRegular(&st) || st.Dev != lst.Dev || st.Ino != lst.Ino:
		unix.Close(fd)
		return nil, st, notRegular
	}
	f, err := NewFile(fd, &st, Join(dir, name))
	return f, st, err
}

// testHookLstated lets a test swap the name between OpenRegularAt's lstat
// (OpenRegular's stat) and its open.
var testHookLstated func()

// ReadSmallFile is like os.ReadFile, but it reads name inside dir as
// OpenRegularAt opens it (a link, a FIFO, a socket or a device is
// ErrNotRegular, never opened or followed), and reads at most max bytes:
// a file that holds more is ErrTooLarge, however large it claims to be. An
// empty file is an empty slice. Safe for concurrent use; it never writes.
func ReadSmallFile(dir *os.File, name string, max int) ([]byte, error) {
	f, st, err := OpenRegularAt(dir, name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st.Size > int64(max) {
		return nil, &os.PathError{Op: "read", Path: f.Name(), Err: ErrTooLarge}
	}
	// The size is only a hint: the file can grow between the fstat and
	// the read, so the read itself is capped too.
	b, err := readCapped(f, max)
	if err != nil {
		return nil, &os.PathError{Op: "read", Path: f.Name(), Err: err}
	}
	return b, nil
}

// readCapped reads r to its end, or fails with ErrTooLarge once it has
// read more than max bytes.
func readCapped(r io.Reader, max int) ([]byte, error) {
	b := make([]byte, max+1)
	n, err := io.ReadFull(r, b)
	switch {
	case err == io.EOF, err == io.ErrUnexpectedEOF:
	case err != nil:
		return nil, err
	case n > max:
		return nil, ErrTooLarge
	}
	return b[:n], nil
}

// ReadConfigFile is like os.ReadFile, but for a path an operator
// configured (a certificate, a key, a password file): it follows links,
// since a mounted secret is commonly one, but refuses anything but a
// regular file without opening it (a device's open runs its driver) and
// without blocking (a FIFO), and reads at most max bytes: a file that
// holds more is ErrTooLarge. A file swapped for another between the stat
// and the open is ErrNotRegular.
func ReadConfigFile(path string, max int) ([]byte, error) {
	f, size, err := OpenRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if size > int64(max) {
		return nil, &os.PathError{Op: "read", Path: path, Err: ErrTooLarge}
	}
	b, err := readCapped(f, max)
	if err != nil {
		return nil, &os.PathError{Op: "read", Path: path, Err: err}
	}
	return b, nil
}

// OpenRegular is like os.Open, but for a path an operator gave: it
// follows links, but refuses anything but a regular file (ErrNotRegular)
// without opening it, since a device's open runs its driver, and without
// blocking, as a FIFO's open would; a file swapped for another between
// the stat and the open is ErrNotRegular too. It returns the file's size.
func OpenRegular(path string) (*os.File, int64, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return nil, 0, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	if !IsRegular(&st) {
		return nil, 0, &os.PathError{Op: "open", Path: path, Err: ErrNotRegular}
	}
	if testHookLstated != nil {
		testHookLstated()
	}
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, 0, err
	}
	opened, err := Fstat(f)
	if err == nil && (!IsRegular(&opened) || opened.Dev != st.Dev || opened.Ino != st.Ino) {
		err = &os.PathError{Op: "open", Path: path, Err: ErrNotRegular}
	}
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	return f, opened.Size, nil
}
