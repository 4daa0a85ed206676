package migrate

import (
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"sessdb/db"
	"sessdb/internal/durable"
	"sessdb/internal/fsat"
	"sessdb/store"
	"sessdb/store/legacy"
)

// castagnoli is the store's checksum polynomial: a record ToDB writes is
// checked by Resolve against its copy, so both must use the same.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// transcriptID computes the identity of current.jsonl: size, CRC32C and
// mtime, from a descriptor opened with O_NOFOLLOW|O_NONBLOCK. It returns
// nil and the type found when the name is missing or not a regular file (a
// link is never followed, a FIFO never read). When f is non-nil the open
// file is handed to it before it is closed (ToLegacy sets its mtime).
func transcriptID(dir *os.File, f func(*os.File, *Transcript) error) (*Transcript, string, error) {
	fd, st, err := fsat.OpenRaw(dir, legacy.TranscriptName, unix.O_RDONLY, 0)
	switch {
	case errors.Is(err, unix.ENOENT):
		return nil, "absent", nil
	case errors.Is(err, unix.ELOOP), errors.Is(err, unix.ENXIO), errors.Is(err, unix.EOPNOTSUPP):
		// A link (ELOOP), or a socket: ENXIO on Linux, EOPNOTSUPP on macOS
		// and FreeBSD. The entry itself says which.
		if lst, lerr := fsat.LstatAt(dir, legacy.TranscriptName); lerr == nil && !fsat.IsRegular(&lst) {
			return nil, fsat.Kind(&lst), nil
		}
		return nil, "", err
	case err != nil:
		return nil, "", err
	}
	if !fsat.IsRegular(&st) {
		unix.Close(fd)
		return nil, fsat.Kind(&st), nil
	}
	file, err := fsat.NewFile(fd, &st, fsat.Join(dir, legacy.TranscriptName))
	if err != nil {
		return nil, "", err
	}
	defer file.Close()
	h := crc32.New(castagnoli)
	// One byte past the size: a file that grew while it was read shows
	// in the count, and is refused below, as is one whose mtime moved.
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
	t := &Transcript{Gen: 1, Size: st.Size, CRC32C: store.Checksum(h.Sum32()), PromotedAt: recordable(fsat.ModTime(&st)).UTC()}
	if f != nil {
		if err := f(file, t); err != nil {
			return nil, "", err
		}
	}
	return t, "regular file", nil
}

// recordable is at as meta.db records it (db.RecordedAt), so that the TTL
// reads it as it read the mtime: an mtime past 2262 is recorded as the
// last time meta.db holds, still in the future, where UnixNano would wrap
// it into 1901, which is expired.
func recordable(at time.Time) time.Time {
	return time.Unix(0, db.RecordedAt(at))
}

// setMtime sets the mtime of f, open as dir's transcript, to at (atime
// untouched) and fsyncs it, so the legacy clock survives a crash.
func setMtime(disk durable.FS, dir *os.File, f *os.File, at time.Time) error {
	if err := disk.SetMtime(dir, legacy.TranscriptName, f, at); err != nil {
		return err
	}
	if err := disk.SyncFile(f); err != nil {
		return &os.PathError{Op: "fsync", Path: f.Name(), Err: err}
	}
	return nil
}
