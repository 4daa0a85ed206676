package migrate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"sessdb/db"
	"sessdb/internal/durable"
	"sessdb/internal/fsat"
	"sessdb/store"
	"sessdb/store/legacy"
)

// transcriptSource is what the transcript is read through; a test
// replaces it to count the bytes read, or to end a run mid-read.
var transcriptSource = func(f *os.File) io.ReaderAt { return f }

// openTranscript opens current.jsonl in dir with O_NOFOLLOW|O_NONBLOCK.
// It returns nil and the type found when the name is missing or not a
// regular file (a link is never followed, a FIFO never opened for long).
func openTranscript(dir *os.File) (*os.File, *unix.Stat_t, string, error) {
	fd, st, err := fsat.OpenRaw(dir, legacy.TranscriptName, unix.O_RDONLY, 0)
	switch {
	case errors.Is(err, unix.ENOENT):
		return nil, nil, "absent", nil
	case errors.Is(err, unix.ELOOP), errors.Is(err, unix.ENXIO), errors.Is(err, unix.EOPNOTSUPP):
		// A link (ELOOP), or a socket: ENXIO on Linux, EOPNOTSUPP on macOS
		// and FreeBSD. The entry itself says which.
		if lst, lerr := fsat.LstatAt(dir, legacy.TranscriptName); lerr == nil && !fsat.IsRegular(&lst) {
			return nil, nil, fsat.Kind(&lst), nil
		}
		return nil, nil, "", err
	case err != nil:
		return nil, nil, "", err
	}
	if !fsat.IsRegular(&st) {
		unix.Close(fd)
		return nil, nil, fsat.Kind(&st), nil
	}
	file, err := fsat.NewFile(fd, &st, fsat.Join(dir, legacy.TranscriptName))
	if err != nil {
		return nil, nil, "", err
	}
	return file, &st, "regular file", nil
}

// transcriptID computes the identity of current.jsonl: size, CRC32C and
// mtime, from a descriptor opened with O_NOFOLLOW|O_NONBLOCK. It returns
// nil and the type found when the name is missing or not a regular file.
//
// Only a file of at most sumUpTo bytes is read: a larger one is returned
// with its size and no checksum (CRC32C 0), for a caller that compares it
// with records none of which is that large (ToLegacy), so that a file
// whose size its owner chose costs nothing; ToDB records every file, and
// passes math.MaxInt64. The read looks at ctx between chunks, and a ctx
// that ends stops it with ctx's error: the key is left as it was.
func transcriptID(ctx context.Context, dir *os.File, sumUpTo int64) (*Transcript, string, error) {
	file, st, kind, err := openTranscript(dir)
	if file == nil || err != nil {
		return nil, kind, err
	}
	defer file.Close()
	t := &Transcript{Gen: 1, Size: st.Size, PromotedAt: recordable(fsat.ModTime(st)).UTC()}
	if st.Size > sumUpTo {
		return t, kind, nil
	}
	// One byte past the size: a file that grew while it was read shows
	// in the count, and is refused below, as is one whose mtime moved.
	limit := st.Size
	if limit < math.MaxInt64 {
		limit++
	}
	n, sum, err := store.ReadCRC32C(ctx, transcriptSource(file), limit)
	if err == nil {
		err = ctx.Err() // stopped: what it read is not the file's sum
	}
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
	t.CRC32C = store.Checksum(sum)
	return t, kind, nil
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
