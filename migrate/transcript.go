package migrate

import (
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"sessdb/internal/fsat"
	"sessdb/store/legacy"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// errChanged is returned when the transcript changed while it was read: a
// worker is still running.
var errChanged = errors.New("changed while it was read (is a worker still running?)")

// transcriptID computes the identity of current.jsonl: size, CRC32C and
// mtime, from a descriptor opened with O_NOFOLLOW|O_NONBLOCK. It returns
// nil and the type found when the name is missing or not a regular file (a
// link is never followed, a FIFO never read). When f is non-nil the open
// file is handed to it before it is closed (ToLegacy sets its mtime).
func transcriptID(dir *os.File, f func(*os.File, *Transcript) error) (*Transcript, string, error) {
	fd, st, err := openFileAt(dir, legacy.TranscriptName, unix.O_RDONLY, 0)
	switch {
	case errors.Is(err, unix.ENOENT):
		return nil, "absent", nil
	case errors.Is(err, unix.ELOOP):
		return nil, "symbolic link", nil
	case errors.Is(err, unix.ENXIO): // a socket
		return nil, "socket", nil
	case err != nil:
		return nil, "", err
	}
	if !fsat.IsRegular(&st) {
		unix.Close(fd)
		return nil, kindOf(&st), nil
	}
	file, err := regularFile(fd, fsat.Join(dir, legacy.TranscriptName))
	if err != nil {
		return nil, "", err
	}
	defer file.Close()
	h := crc32.New(castagnoli)
	n, err := io.Copy(h, io.NewSectionReader(file, 0, st.Size+1))
	if err != nil {
		return nil, "", fmt.Errorf("read %s: %w", file.Name(), err)
	}
	var after unix.Stat_t
	if err := unix.Fstat(int(file.Fd()), &after); err != nil {
		return nil, "", &os.PathError{Op: "fstat", Path: file.Name(), Err: err}
	}
	if n != st.Size || after.Size != st.Size || after.Mtim != st.Mtim {
		return nil, "", &os.PathError{Op: "read", Path: file.Name(), Err: errChanged}
	}
	t := &Transcript{Size: st.Size, CRC32C: h.Sum32(), PromotedAt: time.Unix(st.Mtim.Unix()).UTC()}
	if f != nil {
		if err := f(file, t); err != nil {
			return nil, "", err
		}
	}
	return t, "regular file", nil
}

// setMtime sets f's mtime to at (atime untouched) and fsyncs it, so the
// legacy clock survives a crash.
func setMtime(disk durability, f *os.File, at time.Time) error {
	if err := disk.setMtime(f, at); err != nil {
		return &os.PathError{Op: "futimens", Path: f.Name(), Err: err}
	}
	if err := disk.syncFile(f); err != nil {
		return &os.PathError{Op: "fsync", Path: f.Name(), Err: err}
	}
	return nil
}

// futimens is utimensat(fd, NULL, ...), as libc's futimens: x/sys/unix has
// no futimens, its Futimes keeps only microseconds, and the mtime must
// come back to the nanosecond the db recorded.
func futimens(fd int, mtime time.Time) error {
	ts := [2]unix.Timespec{{Nsec: unix.UTIME_OMIT}, unix.NsecToTimespec(mtime.UnixNano())}
	_, _, e := unix.Syscall6(unix.SYS_UTIMENSAT, uintptr(fd), 0, uintptr(unsafe.Pointer(&ts[0])), 0, 0, 0)
	if e != 0 {
		return e
	}
	return nil
}
