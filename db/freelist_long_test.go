package db

import (
	"fmt"
	"os"
	"testing"
)

// bbolt writes a freelist of 0xFFFF ids or more in a long form: the
// header's count says 0xFFFF, and the real count takes the first slot.
// bbolt reads that form whatever the count, so a writer accepts it: a
// file grown past 64 Ki free pages (64 MiB of 1 KiB pages) must stay
// writable. The form is written here by hand over a small file's list.
func TestAWriterAcceptsTheLongFormOfTheFreelist(t *testing.T) {
	kd := newKeyDir(t)
	d := mustOpen(t, kd, true)
	for i := range HistoryLimit + 6 {
		if _, _, err := promoteLike(d, fmt.Sprintf("job-%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	d.Close()
	m, err := inspect(t, kd.db)
	if err != nil {
		t.Fatal(err)
	}
	file := readFile(t, kd.db)
	off := m.Pages[m.Active].Freelist * uint64(m.PageSize)
	count := uint64(nativeEndian.Uint16(file[off+10:]))
	if count < 2 || count+1 > (uint64(m.PageSize)-pageHeaderSize)/8 {
		t.Fatalf("the freelist lists %d ids; the test needs 2 or more and room for one more", count)
	}
	ids := off + pageHeaderSize
	copy(file[ids+8:], file[ids:ids+8*count])
	nativeEndian.PutUint64(file[ids:], count)
	nativeEndian.PutUint16(file[off+10:], 0xFFFF)
	if err := os.WriteFile(kd.db, file, 0o600); err != nil {
		t.Fatal(err)
	}
	tr, err := tryWriter(kd, file, HistoryLimit+6, "long-freelist")
	if err != nil {
		t.Fatal(err)
	}
	if tr.outcome != "committed" {
		t.Fatalf("the writer %s a file whose freelist of %d ids is in the long form", tr.outcome, count)
	}
}
