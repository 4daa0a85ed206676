package db

import (
	"math"
	"testing"
)

// HistoryFull returns exactly the error AppendHistory would for want of a
// sequence number, so that check can report a key that takes no write: nil
// for an empty history or one below the last sequence number, ErrDamaged
// once the newest entry holds 2^64-1, one entry or many.
func TestHistoryFullAgreesWithAppendHistory(t *testing.T) {
	for _, gens := range [][]uint64{{math.MaxUint64}, {math.MaxUint64 - 1, 7}} {
		kd := newKeyDir(t)
		d := mustOpen(t, kd, true)
		full := func() (err error) {
			d.View(func(tx *Tx) error { err = tx.HistoryFull(); return nil })
			return err
		}
		if err := full(); err != nil {
			t.Fatalf("empty history: %v", err)
		}
		for i, g := range gens {
			if err := full(); err != nil {
				t.Fatalf("%v: before entry %d: %v", gens, i, err)
			}
			// In an empty bucket the key is the gen; after it, one above.
			if err := d.Update(func(tx *Tx) error { return appended(tx.AppendHistory(HistoryEntry{Gen: g})) }); err != nil {
				t.Fatal(err)
			}
		}
		wantErr(t, full(), ErrDamaged)
		wantErr(t, d.Update(func(tx *Tx) error { return appended(tx.AppendHistory(HistoryEntry{Gen: 1})) }), ErrDamaged)
	}
}
