package store

import (
	"bytes"
	"context"
	"errors"
	"hash/crc32"
	"io"
	"testing"
)

// VerifyRecorded is package fleet's way to verify a key the way a key
// dir's check does, so store's own suite holds it to its doc: a nil ctx
// is no deadline, and a ctx that has ended is the call's error, not a
// verdict read from a partial read.
func TestVerifyRecordedHonoursItsContext(t *testing.T) {
	data := []byte("a transcript's bytes\n")
	sum := uint64(crc32.Checksum(data, crc32.MakeTable(crc32.Castagnoli)))
	size := int64(len(data))
	//lint:ignore SA1012 VerifyRecorded's doc takes a nil ctx, and this holds it to that
	r, err := VerifyRecorded(nil, bytes.NewReader(data), size, size, sum, 0)
	if err != nil || r == nil || r.Result != VerifyOK {
		t.Fatalf("nil ctx: %+v, %v; want %s", r, err, VerifyOK)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r, err = VerifyRecorded(ctx, bytes.NewReader(data), size, size, sum, 0)
	if !errors.Is(err, context.Canceled) || r != nil {
		t.Fatalf("ended ctx: %+v, %v; want context.Canceled and no report", r, err)
	}
}

// noRead is a transcript that must not be read.
type noRead struct{ t *testing.T }

func (r noRead) ReadAt([]byte, int64) (int, error) {
	r.t.Error("a record over the max-bytes bound was read")
	return 0, io.EOF
}

// A record over the max-bytes bound is not read at all, whatever the bound
// (one byte is a bound): it is too-large, as a resolve would refuse it
// unread, or a mismatch when fstat's size already differs from the record,
// which needs no read to tell.
func TestVerifyRecordedReadsNothingOverTheBound(t *testing.T) {
	for _, c := range []struct {
		size, recSize, maxBytes int64
		want                    string
	}{
		{2, 2, 1, VerifyTooLarge},
		{21, 21, 20, VerifyTooLarge},
		{22, 21, 20, VerifyMismatch},
		{20, 21, 20, VerifyMismatch},
	} {
		r, err := VerifyRecorded(context.Background(), noRead{t}, c.size, c.recSize, 0, c.maxBytes)
		if err != nil || r == nil || r.Result != c.want || r.Bytes != 0 {
			t.Errorf("%d bytes, record %d, bound %d: %+v, %v; want %s, nothing read", c.size, c.recSize, c.maxBytes, r, err, c.want)
		}
	}
}

// A file longer than its record is a mismatch even when the size passed in
// (fstat's, taken before the read) says otherwise, as when the file grows
// between the two: the read goes one byte past the record to tell.
func TestVerifyRecordedTellsALongerFile(t *testing.T) {
	data := []byte("a transcript's bytes\nand a line appended after the fstat\n")
	rec := data[:21]
	sum := uint64(crc32.Checksum(rec, crc32.MakeTable(crc32.Castagnoli)))
	r, err := VerifyRecorded(context.Background(), bytes.NewReader(data), int64(len(rec)), int64(len(rec)), sum, 0)
	if err != nil || r == nil || r.Result != VerifyMismatch {
		t.Fatalf("%d bytes under a record of %d: %+v, %v; want %s", len(data), len(rec), r, err, VerifyMismatch)
	}
}
