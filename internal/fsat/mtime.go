package fsat

import (
	"io/fs"
	"math"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// SetMtime is like os.Chtimes with only the modification time, to the
// nanosecond, and the access time left as it is, but for the file f that
// is open at name inside dir, never through a link. On Linux and FreeBSD
// it works on f's descriptor and dir and name only name errors; on macOS
// see the package doc. The time is durable once f is synced.
func SetMtime(dir *os.File, name string, f *os.File, mtime time.Time) error {
	ts := [2]unix.Timespec{{Nsec: utimeOmit}, unix.NsecToTimespec(mtime.UnixNano())}
	if err := setMtime(dir, name, f, &ts); err != nil {
		return &os.PathError{Op: "futimens", Path: f.Name(), Err: err}
	}
	return nil
}

// Touch is like futimens(f, NULL): it sets f's access and modification
// times to the current time by the clock of the filesystem's writer, which
// for a network filesystem is the server (NFS's SET_TO_SERVER_TIME), where
// a time passed in would be this host's. On macOS it is futimes(f, NULL),
// which does the same. A call a signal interrupts (a FUSE or NFS mount can
// return EINTR) is made again.
func Touch(f *os.File) error {
	if _, err := IgnoringEINTR(func() (struct{}, error) { return struct{}{}, touch(f) }); err != nil {
		return &os.PathError{Op: "futimens", Path: f.Name(), Err: err}
	}
	return nil
}

// ModTime is st's modification time. time.Unix wraps a second count
// within 62135596800 of 2^63 (its own origin is year 1) to the far past,
// and a file system that keeps any mtime it is given (tmpfs) can hold
// one: a file dated at the end of time was then older than any, and a
// key whose transcript it is expired and reaped. Such a time is held at
// the last second that does not wrap, still the far future.
func ModTime(st *unix.Stat_t) time.Time {
	sec, nsec := st.Mtim.Unix()
	return time.Unix(min(sec, maxUnixSec), nsec)
}

// InfoModTime is fi's modification time, held as ModTime holds it:
// fs.FileInfo's ModTime is time.Unix of the file's second count, wrapped
// near 2^63 to the far past, and Unix gives that count back unwrapped.
func InfoModTime(fi fs.FileInfo) time.Time {
	t := fi.ModTime()
	return time.Unix(min(t.Unix(), maxUnixSec), int64(t.Nanosecond()))
}

// maxUnixSec is the last Unix second time.Unix holds without wrapping.
const maxUnixSec = math.MaxInt64 - 62135596800
