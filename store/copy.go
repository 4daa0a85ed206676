package store

import (
	"context"
	"fmt"
	"hash/crc32"
	"io"
	"os"

	"sessdb/gates"
	"sessdb/internal/callerctx"
)

// castagnoli is the CRC32C table: the checksum every record of a
// transcript stores (meta.db's, a fleet's). Go's hash/crc32 computes this
// polynomial with the CPU's CRC32 instructions on amd64 (SSE4.2) and arm64.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// resetStaged empties the staged file for another copy or a cold start.
func resetStaged(f *os.File) error {
	if err := f.Truncate(0); err != nil {
		return err
	}
	_, err := f.Seek(0, io.SeekStart)
	return err
}

// coldAfterCopy empties the staged file a copy filled, and cold-starts.
func coldAfterCopy(staged *os.File, r gates.Reason, cold func(gates.Reason) error) error {
	if err := resetStaged(staged); err != nil {
		return err
	}
	return cold(r)
}

// copyCounted copies at most limit bytes from src (from offset 0) to dst,
// and returns how many it copied and their CRC32C. A copy of more than
// bigCopy bytes reads through a buffer of bigCopy bytes. Every caller's
// limit is the size it expects plus one, so the limit sizes the buffer. A
// ctx that ends stops it before its next read, with ctx's error (in a
// wrapped one): at most bigCopy bytes after the cancel.
func copyCounted(ctx context.Context, dst io.Writer, src *os.File, limit int64) (int64, uint32, error) {
	size := 32 << 10 // io.Copy's own
	if limit > bigCopy {
		size = bigCopy
	}
	h := crc32.New(castagnoli)
	var r io.Reader = sourceReader{io.NewSectionReader(src, 0, limit)}
	if ctx.Done() != nil {
		r = callerctx.Reader(ctx, r)
	}
	n, err := io.CopyBuffer(io.MultiWriter(dst, h), r, make([]byte, size))
	if err != nil {
		return n, 0, fmt.Errorf("copy %s: %w", src.Name(), err)
	}
	return n, h.Sum32(), nil
}

// sourceError is a copy's failure to read its source, as opposed to
// writing the staged file: the key view judges it (KeyView.Lost).
type sourceError struct{ err error }

func (e *sourceError) Error() string { return e.err.Error() }

// Unwrap keeps the cause reachable by errors.Is when a read error is
// returned as a fault rather than judged.
func (e *sourceError) Unwrap() error { return e.err }

// sourceReader marks its reader's errors as the source's.
type sourceReader struct{ r io.Reader }

// Read passes io.EOF through unwrapped: io.Copy ends on it by identity.
func (s sourceReader) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if err != nil && err != io.EOF {
		err = &sourceError{err}
	}
	return n, err
}

// bigCopy is the transcript size from which copyCounted reads through a
// buffer of that size (at 8 MiB, 1.9 ms against 3.2 ms through io.Copy's
// 32 KiB, which it keeps below). A mapping of the file, read in place with
// no copy into a buffer, was faster only for a file written in one call:
// a transcript as promote writes one (32 KiB writes) copied through a
// mapping in 6.7 to 7.4 ms (internal/bench BenchmarkCopyCRC/8MiB, whose
// source is written so), and an 8 MiB resume took 8.3 to 11.3 ms, 2.2 to
// 3.2 ms since (docs/PERFORMANCE.md, 2026-12-05).
const bigCopy = 1 << 20

// ctxReaderAt is callerctx.Reader for an io.ReaderAt: the staged file,
// as a KeyTxn's Stage copies it: a copy stops within one chunk (bigCopy
// at most) of its caller's cancel, and the error is the caller's, not the
// source's (KeyView.Lost never judges it).
type ctxReaderAt struct {
	ctx context.Context
	r   io.ReaderAt
}

// ReadAt reads from r unless ctx is done.
func (c ctxReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.ReadAt(p, off)
}

// readerAtIn is r, bounded by ctx where ctx can end: a context that never
// ends (context.Background's) leaves r as it is, and its copy as fast.
func readerAtIn(ctx context.Context, r io.ReaderAt) io.ReaderAt {
	if ctx.Done() == nil {
		return r
	}
	return ctxReaderAt{ctx, r}
}
