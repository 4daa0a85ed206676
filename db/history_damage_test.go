package db

import (
	"errors"
	"testing"
)

// History is how dump, check and a resolve's chain count read history/: an
// entry that does not decode is damage (ErrDamaged), never a history read
// as empty, which would reset the resume chain and hide the damage. The
// call itself says so, not only the transaction it ends: code in the same
// transaction acts on what History returned.
func TestHistoryReportsAnEntryThatDoesNotDecode(t *testing.T) {
	kd := newKeyDir(t)
	d := mustOpen(t, kd, true)
	if err := d.Update(func(tx *Tx) error { return appendN(tx, 1, 3) }); err != nil {
		t.Fatal(err)
	}
	if err := d.Update(func(tx *Tx) error {
		b, err := tx.bucket(bucketHistory)
		if err != nil {
			return err
		}
		return b.Put(historyKey(4), []byte{0xc1}) // a byte msgpack never uses
	}); err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{0, 1} {
		var h []HistoryEntry
		var herr error
		err := d.View(func(tx *Tx) error { h, herr = tx.History(n); return nil })
		if !errors.Is(herr, ErrDamaged) || h != nil {
			t.Errorf("History(%d) over an undecodable entry = %+v, %v; want ErrDamaged and no entries", n, h, herr)
		}
		if !errors.Is(err, ErrDamaged) {
			t.Errorf("the transaction that met it: %v; want ErrDamaged", err)
		}
	}
}
