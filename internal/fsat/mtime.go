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
//
// Where time_t has 32 bits (linux/arm), a time it cannot hold is set to the
// nearest it holds, 2038-01-19 or 1901-12-13: on the side of now it is on,
// where converting it would wrap it round (a transcript dated past 2038,
// in the future for the TTL, would be set in 1901, expired).
func SetMtime(dir *os.File, name string, f *os.File, mtime time.Time) error {
	ts := [2]unix.Timespec{{Nsec: utimeOmit}, {}}
	setClamped(&ts[1].Sec, mtime.Unix())
	setClamped(&ts[1].Nsec, int64(mtime.Nanosecond()))
	if err := setMtime(dir, name, f, &ts); err != nil {
		return &os.PathError{Op: "futimens", Path: f.Name(), Err: err}
	}
	return nil
}

// setClamped sets *field, a Timespec's Sec or Nsec, to v, or to the
// nearest value a field of 32 bits holds.
func setClamped[T int32 | int64](field *T, v int64) {
	*field = T(v)
	switch {
	case int64(*field) == v:
	case v > 0:
		*field = T(math.MaxInt32)
	default:
		*field = T(math.MinInt32)
	}
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
