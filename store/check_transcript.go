package store

import (
	"context"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"

	"sessdb/db"
	"sessdb/internal/callerctx"
)

// VerifyReport is the result of reading what a resolve would copy of a
// key and comparing it with the record of the promotion that landed it,
// as the copy's own check does (docs/json.md, dump.verify): in a key dir,
// a committed promotion's temp not yet renamed into place, and the
// transcript in place where a resolve falls back to it, which may be the
// generation before that promotion.
type VerifyReport struct {
	// Result is "ok" (a copy a resolve would take), "mismatch" (size or
	// CRC32C differ: a resolve would cold-start it as transcript-replaced,
	// or after a damaged temp promotion-lost), "no-record" (a legacy key, or
	// a meta.db that records no transcript), "no-transcript", "too-large"
	// (the record, or for a key with no record the file, is over the
	// max-bytes bound: a resolve refuses it as too-large whatever it holds,
	// so it is not read), or "unreadable" (an I/O error; Detail says which).
	Result string `json:"result"`
	Bytes  int64  `json:"bytes"` // bytes read, of the last file read
	CRC32C uint64 `json:"-"`     // of the bytes read; 8 hex digits in JSON
	// Detail is what differs, or the error; with ok, the generation
	// before a pending promotion when that is what a resolve would copy.
	Detail string `json:"detail"`
}

// Verify results.
const (
	VerifyOK           = "ok"            // the size and CRC32C are the record's (or the generation's before a pending promotion)
	VerifyMismatch     = "mismatch"      // they differ: resolve says transcript-replaced (or promotion-lost)
	VerifyNoRecord     = "no-record"     // nothing to compare with
	VerifyNoTranscript = "no-transcript" // no regular transcript to read
	VerifyTooLarge     = "too-large"     // over the max-bytes bound, not read
	VerifyUnreadable   = "unreadable"    // an I/O error
)

// verifyChunk is how much ReadCRC32C reads between two looks at its
// context.
const verifyChunk = 1 << 20

// verifySource is what verify reads the transcript through; a test
// replaces it to count the bytes read.
var verifySource = func(f *os.File) io.ReaderAt { return f }

// look is what a read of the transcript a key dir has open found, as
// verify reads it: bounded as a resolve's copy of it is (keyDir.look).
type look struct {
	c       copied // what a resolve's copy of it would be known as
	got     int64  // its size: the bytes read, or fstat's when the read stopped at its bound
	n       int64  // the bytes read
	sum     uint32 // their CRC32C
	err     error  // the read's I/O error
	overMax int64  // the max-bytes bound the file is over (not read), else 0
}

// look reads the transcript k has open, under the key's shared lock (so
// no promotion renames a new one in meanwhile), through the descriptor
// openKey opened, never by name, and says what a resolve's copy of it
// would be known as. With read false it reads nothing: the copy is known
// by its size alone.
//
// The read is bounded as the copy is, by what could match: want (the
// largest identity the file could be) plus one byte (the byte that tells
// a longer file), never the file's own size, which a hostile or damaged
// file can make anything (a sparse 64 GiB file reads as 64 GiB of zeros).
// With maxBytes set, a file over it is not read at all: a resolve refuses
// it as too-large before it looks at a byte. An error is ctx's: it is
// checked between chunks, so an interrupt stops the read within one
// chunk.
func (k *keyDir) look(ctx context.Context, want int64, read bool, maxBytes int64) (look, error) {
	size := k.tst.Size
	limit := want
	if limit < math.MaxInt64 {
		limit++
	}
	l := look{c: copied{size: min(size, max(limit, 0))}, got: size}
	switch {
	case !read:
		return l, nil
	case maxBytes > 0 && size > maxBytes:
		l.overMax = maxBytes
		return l, nil
	case want < 0:
		return l, nil // a record no file can match
	}
	n, sum, err := readCRC(ctx, verifySource(k.transcript), limit)
	if ctxErr := ctx.Err(); ctxErr != nil {
		return look{}, ctxErr
	}
	l.n, l.sum, l.err = n, sum, err
	// A read that reached its bound stopped short of the file's end: the
	// file is longer than anything it could match, and its size is the
	// one fstat saw.
	l.got = n
	if n == limit {
		l.got = max(size, n)
	}
	if err == nil {
		l.c = copied{size: n, sum: sum, summed: true}
	}
	return l, nil
}

// against reports l held against t, the record (nil: no record), as
// verify does.
func (l look) against(t *db.Transcript) *VerifyReport {
	r := &VerifyReport{Bytes: l.n, CRC32C: uint64(l.sum)}
	switch {
	case l.err != nil:
		r.Result, r.Detail = VerifyUnreadable, l.err.Error()
	case l.overMax > 0 && (t == nil || l.got == t.Size):
		r.Result, r.Detail = VerifyTooLarge, fmt.Sprintf("%d bytes, over the max-bytes bound %d: not read (resolve: too-large)", l.got, l.overMax)
	case t == nil:
		r.Result = VerifyNoRecord
	case !l.c.is(t):
		r.Result, r.Detail = VerifyMismatch, l.differs(t, "the record")
	default:
		r.Result = VerifyOK
	}
	return r
}

// differs says how l differs from t, which what names.
func (l look) differs(t *db.Transcript, what string) string {
	if l.got != t.Size {
		return fmt.Sprintf("%d bytes, %s says %d", l.got, what, t.Size)
	}
	return fmt.Sprintf("CRC32C %08x, %s says %08x", l.sum, what, t.CRC32C)
}

// readCRC is ReadCRC32C with a failed read's error naming src.
func readCRC(ctx context.Context, src io.ReaderAt, limit int64) (int64, uint32, error) {
	n, sum, err := ReadCRC32C(ctx, src, limit)
	if err != nil {
		err = fmt.Errorf("read %s: %w", nameOf(src), err)
	}
	return n, sum, err
}

// ReadCRC32C reads src from offset 0 until limit bytes, its end, an
// error or the end of ctx, whichever comes first, a megabyte at a time,
// and returns how many bytes it read and their CRC32C (Castagnoli, as a
// record's). ctx is looked at before every megabyte, which takes
// milliseconds even from a slow disk, so an interrupt abandons the read
// of a huge file (a sparse one reads as gigabytes of zeros) within far
// less than a second. A read ctx ended returns ctx's error, which no
// read of src returns, with what it read by then: never taken for a
// whole read of a shorter file. A nil ctx is context.Background(); one
// that breaks Go's contract is held to it (callerctx.Of): a Done closed
// while Err is nil ends the read with context.Canceled, a panic in its
// Err or Done with an error that wraps it.
func ReadCRC32C(ctx context.Context, src io.ReaderAt, limit int64) (int64, uint32, error) {
	ctx = callerctx.Of(ctx)
	buf := make([]byte, max(min(limit, verifyChunk), 0))
	var n int64
	var sum uint32
	for n < limit {
		if err := ctx.Err(); err != nil {
			return n, sum, err
		}
		m, err := src.ReadAt(buf[:min(int64(len(buf)), limit-n)], n)
		sum = crc32.Update(sum, castagnoli, buf[:m])
		n += int64(m)
		if err == io.EOF {
			break
		}
		if err != nil {
			return n, sum, err
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
