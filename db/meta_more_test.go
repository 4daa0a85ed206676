package db

import (
	"bytes"
	"errors"
	"hash/fnv"
	"io"
	"os"
	"strings"
	"syscall"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// The page-size probe reads past a first meta page that is not valid; a
// read of it that fails is that read's error, as for the meta pages
// themselves (TestMetaPageNotReadIsTheReadsError), not damage: check
// --repair moves a damaged meta.db aside.
func TestAPageSizeProbeNotReadIsTheReadsError(t *testing.T) {
	kd := makeDB(t, 4)
	b := readFile(t, kd.db)
	good, err := InspectMeta(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	b[pageHeaderSize] ^= 0xFF // page 0's magic: the probe looks for page 1
	if m, err := InspectMeta(bytes.NewReader(b), int64(len(b))); err != nil || m.PageSize != good.PageSize || m.Active != 1 {
		t.Fatalf("InspectMeta with page 0 invalid = page size %d, active %d, %v; want %d, 1", m.PageSize, m.Active, err, good.PageSize)
	}
	_, err = InspectMeta(failingAt{b, int64(good.PageSize), firstMetaRead}, int64(len(b)))
	if !errors.Is(err, syscall.EIO) || errors.Is(err, ErrDamaged) {
		t.Fatalf("InspectMeta with the probe's read failing: %v; want EIO, not damage", err)
	}
}

// InspectMeta reports every field of a meta page as the file holds it,
// Flags too, which bbolt 1.5 writes as 0 and never reads, and the root
// bucket's Sequence, which this package leaves at 0.
func TestInspectMetaReportsTheFlags(t *testing.T) {
	kd := makeDB(t, 1)
	b := readFile(t, kd.db)
	m := b[pageHeaderSize : pageHeaderSize+metaSize]
	nativeEndian.PutUint32(m[12:], 0x5a)
	nativeEndian.PutUint64(m[24:], 77)
	h := fnv.New64a()
	h.Write(m[:metaSumBytes])
	nativeEndian.PutUint64(m[metaSumBytes:], h.Sum64())
	if err := os.WriteFile(kd.db, b, 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := inspect(t, kd.db)
	if err != nil {
		t.Fatal(err)
	}
	if p := got.Pages[0]; !p.Valid() || p.Flags != 0x5a || p.Sequence != 77 {
		t.Errorf("page 0: valid %v, flags %#x, sequence %d; want valid, 0x5a, 77", p.Valid(), p.Flags, p.Sequence)
	}
}

// A Tx is valid only until its function returns (Tx's doc): one kept past
// its View answers ErrClosed on a reader's snapshot as on bbolt's
// transactions (TestUseAfterEnd), whatever the handle has done since.
func TestASnapshotTxUsedAfterItsViewIsRefused(t *testing.T) {
	kd := makeDB(t, 1)
	r := mustOpen(t, kd, false)
	if r.snap == nil {
		t.Fatal("the reader of a small file reads no snapshot")
	}
	var kept *Tx
	r.View(func(tx *Tx) error { kept = tx; return nil })
	_, err := kept.Sidecars()
	wantErr(t, err, ErrClosed)
}

// sparseMeta is a file of size bytes, zeros but for a valid meta page of
// page size ps at offset at.
type sparseMeta struct {
	size, at int64
	page     []byte
}

func (s sparseMeta) ReadAt(p []byte, off int64) (int, error) {
	if off >= s.size {
		return 0, io.EOF
	}
	n := int(min(int64(len(p)), s.size-off))
	clear(p[:n])
	if lo, hi := max(off, s.at), min(off+int64(n), s.at+int64(len(s.page))); lo < hi {
		copy(p[lo-off:hi-off], s.page[lo-s.at:hi-s.at])
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// The probe for the second meta page goes as far as bbolt's, to 16 MiB: a
// file of the largest page size whose first meta page is torn is opened by
// its second, as bbolt would, not refused.
func TestTheProbeFindsASecondMetaPageAt16MiB(t *testing.T) {
	const ps = 16 << 20
	page := make([]byte, pageHeaderSize+metaSize)
	nativeEndian.PutUint64(page[0:], 1)
	m := page[pageHeaderSize:]
	nativeEndian.PutUint32(m[0:], boltMagic)
	nativeEndian.PutUint32(m[4:], boltVersion)
	nativeEndian.PutUint32(m[8:], ps)
	nativeEndian.PutUint64(m[16:], 3)  // root
	nativeEndian.PutUint64(m[32:], 2)  // freelist
	nativeEndian.PutUint64(m[40:], 4)  // high-water mark
	nativeEndian.PutUint64(m[48:], 10) // txid
	h := fnv.New64a()
	h.Write(m[:metaSumBytes])
	nativeEndian.PutUint64(m[metaSumBytes:], h.Sum64())
	got, err := InspectMeta(sparseMeta{size: 4 * ps, at: ps, page: page}, 4*ps)
	if err != nil || got.PageSize != ps || got.Active != 1 {
		t.Fatalf("InspectMeta = page size %d, active %d, %v; want %d, 1", got.PageSize, got.Active, err, ps)
	}
}

// A file with no valid meta page promises no pages: its HighWater is 0,
// for a caller that prints what InspectMeta found beside its error.
func TestTheHighWaterOfAFileWithoutAValidMetaPageIsZero(t *testing.T) {
	b := bytes.Repeat([]byte("not a bbolt file\n"), 600)
	m, err := InspectMeta(bytes.NewReader(b), int64(len(b)))
	if !errors.Is(err, ErrDamaged) || m.Active != -1 {
		t.Fatalf("InspectMeta of garbage = active %d, %v; want -1, damage", m.Active, err)
	}
	if hw := m.HighWater(); hw != 0 {
		t.Errorf("HighWater = %d, want 0", hw)
	}
}

// A transaction's errors name what the caller ran: "update" for Update,
// "view" for View.
func TestATransactionsErrorNamesItsKind(t *testing.T) {
	kd := makeDB(t, 0)
	d := mustOpen(t, kd, true)
	d.Close()
	for op, err := range map[string]error{
		"update": d.Update(func(*Tx) error { return nil }),
		"view":   d.View(func(*Tx) error { return nil }),
	} {
		var pe *os.PathError
		if !errors.As(err, &pe) || pe.Op != op || !errors.Is(err, ErrClosed) {
			t.Errorf("%s of a closed DB: %v; want a PathError of %q wrapping ErrClosed", op, err, op)
		}
	}
}

// A page size just under 1 KiB is named as below 1 KiB, the first rule it
// breaks, as checkPageSize's doc says.
func TestAPageSizeJustUnder1KiBIsBelow1KiB(t *testing.T) {
	_, err := checkPageSize(1023)
	if !errors.Is(err, ErrDamaged) || err == nil || !strings.Contains(err.Error(), "below 1 KiB") {
		t.Errorf("checkPageSize(1023) = %v; want damage naming \"below 1 KiB\"", err)
	}
}

// Damage a Tx method found is returned by View even if fn dropped it, on a
// reader's snapshot as on bbolt's transactions (TestDamagedRecordNamesKey).
func TestASnapshotViewReturnsDamageItsFunctionDropped(t *testing.T) {
	kd := makeDB(t, 1)
	bdb, err := bolt.Open(kd.db, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = bdb.Update(func(tx *bolt.Tx) error {
		return tx.Bucket([]byte(bucketSidecars)).Put([]byte(keyVenue), []byte{0xc0})
	})
	bdb.Close()
	if err != nil {
		t.Fatal(err)
	}
	r := mustOpen(t, kd, false)
	if r.snap == nil {
		t.Fatal("the reader of a small file reads no snapshot")
	}
	err = r.View(func(tx *Tx) error {
		tx.Sidecars() // damage found, and dropped
		return nil
	})
	wantErr(t, err, ErrDamaged)
}
