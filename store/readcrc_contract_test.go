package store

import (
	"bytes"
	"context"
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
	"testing"

	"sessdb/db"
	"sessdb/internal/fsat"
	"sessdb/internal/hostilectx"
)

// The contexts that break Go's contract a caller may hand over.
type (
	closedNoErr = hostilectx.DoneNoErr
	errPanics   = hostilectx.ErrPanics
)

// ReadCRC32C, VerifyRecorded and PendingTempWhole are exported, and a Go
// caller reaches them with a context of its own. They took it raw: one
// whose Done was closed while its Err was nil read the whole file as if
// never cancelled, one whose Err panicked panicked in them, and
// PendingTempWhole panicked on a nil ctx (a nil pointer in its own
// ctx.Err()), which every other entry takes as context.Background(). Each
// holds ctx to the contract now (callerctx.Of), and a read ctx ended
// returns ctx's error: before, the caller told an interrupted read only
// by its own ctx.Err(), which for such a context is nil, so a read cut
// short was the sum of a shorter file.
func TestTheReadsTakeAContextThatBreaksTheContract(t *testing.T) {
	data := bytes.Repeat([]byte("0123456789abcdef"), 3<<16) // 3 MiB: three chunks
	sum := uint64(crc32.Checksum(data, castagnoli))
	kdPath := t.TempDir()
	if err := os.WriteFile(filepath.Join(kdPath, tmpPrefix+"0011223344556677"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	kd, err := fsat.OpenDir(kdPath)
	if err != nil {
		t.Fatal(err)
	}
	defer kd.Close()
	p := &db.Pending{Tmp: tmpPrefix + "0011223344556677", Size: int64(len(data)), CRC32C: sum, Gen: 2}
	missing := &db.Pending{Tmp: tmpPrefix + "00000000000000ff", Size: int64(len(data)), CRC32C: sum, Gen: 2}

	guard := func(name string, f func()) {
		t.Helper()
		defer func() {
			if r := recover(); r != nil {
				t.Errorf("%s: panicked: %v", name, r)
			}
		}()
		f()
	}
	for _, c := range []struct {
		name string
		ctx  context.Context
	}{{"Done closed, Err nil", closedNoErr{Context: context.Background()}}, {"Err panics", errPanics{Context: context.Background()}}} {
		guard(c.name+": ReadCRC32C", func() {
			n, _, err := ReadCRC32C(c.ctx, bytes.NewReader(data), int64(len(data))+1)
			if !errors.Is(err, context.Canceled) || n != 0 {
				t.Errorf("%s: ReadCRC32C read %d bytes, %v; want none, context.Canceled", c.name, n, err)
			}
		})
		guard(c.name+": VerifyRecorded", func() {
			r, err := VerifyRecorded(c.ctx, bytes.NewReader(data), int64(len(data)), int64(len(data)), sum, 0)
			if !errors.Is(err, context.Canceled) || r != nil {
				t.Errorf("%s: VerifyRecorded = %+v, %v; want no report, context.Canceled", c.name, r, err)
			}
		})
		guard(c.name+": PendingTempWhole", func() {
			whole, err := PendingTempWhole(c.ctx, kd, p)
			if !errors.Is(err, context.Canceled) || whole {
				t.Errorf("%s: PendingTempWhole = %v, %v; want false, context.Canceled", c.name, whole, err)
			}
		})
		// No temp to read: its ctx is asked after the look all the same,
		// held as every other ask is (a plain cancel's answer is
		// context.Canceled too), not taken raw, where Err panics.
		guard(c.name+": PendingTempWhole of a missing temp", func() {
			whole, err := PendingTempWhole(c.ctx, kd, missing)
			if !errors.Is(err, context.Canceled) || whole {
				t.Errorf("%s: PendingTempWhole of a missing temp = %v, %v; want false, context.Canceled", c.name, whole, err)
			}
		})
	}
	guard("nil: PendingTempWhole", func() {
		//lint:ignore SA1012 a nil ctx is the promise under test
		whole, err := PendingTempWhole(nil, kd, p)
		if err != nil || !whole {
			t.Errorf("nil ctx: PendingTempWhole = %v, %v; want the temp whole", whole, err)
		}
	})
}
