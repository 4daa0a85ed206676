package store

import (
	"context"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
)

// VerifyReport is the result of reading a transcript and comparing it with
// the record of the promotion that landed it.
type VerifyReport struct {
	// Result is "ok", "mismatch" (size or CRC32C differ: a resolve would
	// cold-start it as transcript-replaced), "no-record" (a legacy key, or
	// a meta.db that records no transcript), "no-transcript", "too-large"
	// (the record, or for a key with no record the file, is over the
	// max-bytes bound: a resolve refuses it as too-large whatever it holds,
	// so it is not read), or "unreadable" (an I/O error; Detail says which).
	Result string `json:"result"`
	Bytes  int64  `json:"bytes"`  // bytes read
	CRC32C uint64 `json:"-"`      // of the bytes read; 8 hex digits in JSON
	Detail string `json:"detail"` // what differs, or the error
}

// Verify results.
const (
	VerifyOK           = "ok"            // the size and CRC32C are the record's
	VerifyMismatch     = "mismatch"      // they differ: resolve says transcript-replaced
	VerifyNoRecord     = "no-record"     // nothing to compare with
	VerifyNoTranscript = "no-transcript" // no regular transcript to read
	VerifyTooLarge     = "too-large"     // over the max-bytes bound, not read
	VerifyUnreadable   = "unreadable"    // an I/O error
)

// verifyChunk is how much verify reads between two looks at its context:
// a megabyte takes milliseconds even from a slow disk, so an interrupt
// stops a read of a huge file within far less than a second.
const verifyChunk = 1 << 20

// verifySource is what verify reads the transcript through; a test
// replaces it to count the bytes read.
var verifySource = func(f *os.File) io.ReaderAt { return f }

// verify reads the open transcript, under the key's shared lock (so no
// promotion renames a new one in meanwhile), and compares it with the
// record. It reads through the descriptor openKey opened, never by name.
//
// The read is bounded by what could match: the record's size plus one byte
// (the byte that tells a longer file), never the file's own size, which a
// hostile or damaged file can make anything (a sparse 64 GiB file reads as
// 64 GiB of zeros). With maxBytes set, nothing over it is read at all: a
// resolve refuses such a transcript as too-large before it looks at a
// byte. An error is ctx's: it is checked between chunks, so an interrupt
// stops the read within one chunk.
func (k *keyDir) verify(ctx context.Context, maxBytes int64) (*VerifyReport, error) {
	if k.transcript == nil {
		return &VerifyReport{Result: VerifyNoTranscript}, nil
	}
	size, id := k.tst.Size, k.identity
	want := size
	if id != nil {
		want = id.Size
	}
	if maxBytes > 0 && want > maxBytes {
		if id != nil && size != id.Size {
			return &VerifyReport{Result: VerifyMismatch, Detail: fmt.Sprintf("%d bytes, the record says %d", size, id.Size)}, nil
		}
		return &VerifyReport{Result: VerifyTooLarge, Detail: fmt.Sprintf("%d bytes, over the max-bytes bound %d: not read (resolve: too-large)", want, maxBytes)}, nil
	}
	if want < 0 {
		return &VerifyReport{Result: VerifyMismatch, Detail: fmt.Sprintf("%d bytes, the record says %d", size, want)}, nil
	}
	limit := want
	if limit < math.MaxInt64 {
		limit++
	}
	n, sum, err := readCRC(ctx, verifySource(k.transcript), limit)
	if ctxErr := ctx.Err(); ctxErr != nil {
		return nil, ctxErr
	}
	r := &VerifyReport{Bytes: n, CRC32C: uint64(sum)}
	// A read that reached its bound stopped short of the file's end: the
	// file is longer than the record, and its size is the one fstat saw.
	got := n
	if n == limit {
		got = max(size, n)
	}
	switch {
	case err != nil:
		r.Result, r.Detail = VerifyUnreadable, err.Error()
	case id == nil:
		r.Result = VerifyNoRecord
	case got != id.Size:
		r.Result, r.Detail = VerifyMismatch, fmt.Sprintf("%d bytes, the record says %d", got, id.Size)
	case id.CRC32C != r.CRC32C:
		r.Result, r.Detail = VerifyMismatch, fmt.Sprintf("CRC32C %08x, the record says %08x", r.CRC32C, id.CRC32C)
	default:
		r.Result = VerifyOK
	}
	return r, nil
}

// readCRC reads src from offset 0 until limit bytes, its end, an error or
// the end of ctx, whichever comes first, in chunks of verifyChunk, and
// returns how many bytes it read and their CRC32C. ctx is looked at before
// every chunk; the caller tells an interrupted read by ctx.Err().
func readCRC(ctx context.Context, src io.ReaderAt, limit int64) (int64, uint32, error) {
	buf := make([]byte, min(limit, verifyChunk))
	var n int64
	var sum uint32
	for n < limit {
		if ctx.Err() != nil {
			return n, sum, nil
		}
		m, err := src.ReadAt(buf[:min(int64(len(buf)), limit-n)], n)
		sum = crc32.Update(sum, castagnoli, buf[:m])
		n += int64(m)
		if err == io.EOF {
			break
		}
		if err != nil {
			return n, sum, fmt.Errorf("read %s: %w", nameOf(src), err)
		}
	}
	return n, sum, nil
}

// nameOf names r in an error: the file's path, or "transcript" for a
// reader a test put in its place (verifySource).
func nameOf(r io.ReaderAt) string {
	if f, ok := r.(interface{ Name() string }); ok {
		return f.Name()
	}
	return "transcript"
}
