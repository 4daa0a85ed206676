package store

import (
	"bytes"
	"context"
	"errors"
	"hash/crc32"
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
	r, err := VerifyRecorded(nil, bytes.NewReader(data), size, size, sum, 0)
	if err != nil || r.Result != VerifyOK {
		t.Fatalf("nil ctx: %+v, %v; want %s", r, err, VerifyOK)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r, err = VerifyRecorded(ctx, bytes.NewReader(data), size, size, sum, 0)
	if !errors.Is(err, context.Canceled) || r != nil {
		t.Fatalf("ended ctx: %+v, %v; want context.Canceled and no report", r, err)
	}
}
