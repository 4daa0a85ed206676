package fsat

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// utimeOmit leaves the access time as it is: UTIME_OMIT of macOS's
// <sys/stat.h>, which x/sys/unix does not define.
const utimeOmit = -2

// errMtimeMissed says the name did not refer to the open file while its
// time was set through the name.
var errMtimeMissed = errors.New("the name was replaced while its mtime was set")

// setMtime sets the time through name with utimensat(AT_SYMLINK_NOFOLLOW):
// macOS's futimens is a libc function that x/sys/unix does not wrap. The
// name must refer to f before and after, or it is an error (the time may
// then have gone to another file at the name, never through a link).
func setMtime(dir *os.File, name string, f *os.File, ts *[2]unix.Timespec) error {
	var fst unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &fst); err != nil {
		return err
	}
	same := func() bool {
		var st unix.Stat_t
		return unix.Fstatat(int(dir.Fd()), name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Dev == fst.Dev && st.Ino == fst.Ino
	}
	if !same() {
		return errMtimeMissed
	}
	if err := unix.UtimesNanoAt(int(dir.Fd()), name, ts[:], unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return err
	}
	if !same() {
		return errMtimeMissed
	}
	return nil
}

// touch is futimes(fd, NULL). macOS's futimens is a libc function x/sys/unix
// does not wrap, but its futimes is; given no times, the kernel sets both
// to now as the filesystem's writer tells it (VA_UTIMES_NULL, which the
// NFS client sends as SET_TO_SERVER_TIME), as Linux's futimens(fd, NULL).
func touch(f *os.File) error { return unix.Futimes(int(f.Fd()), nil) }
