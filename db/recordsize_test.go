package db

import (
	"errors"
	"strings"
	"testing"
)

// A record larger than MaxRecordBytes, encoded, is refused at the put or
// the append (ErrRecordTooLarge), and fails its transaction: the file
// keeps what it held, and opens (a file holding such a value would be
// damage to every later open). One a record long is written and read
// back.
func TestARecordPastMaxRecordBytesIsNeverWritten(t *testing.T) {
	kd := newKeyDir(t)
	d := mustOpen(t, kd, true)
	populate(t, d, 3)
	// A string's msgpack header is 5 bytes: the longest value a record
	// holds is 5 bytes shorter than MaxRecordBytes.
	fits, over := strings.Repeat("v", MaxRecordBytes-5), strings.Repeat("v", MaxRecordBytes-4)
	for name, put := range map[string]func(*Tx) error{
		"venue":   func(tx *Tx) error { return tx.PutVenue(over) },
		"history": func(tx *Tx) error { _, err := tx.AppendHistory(HistoryEntry{Gen: 9, Job: over}); return err },
	} {
		if err := d.Update(put); !errors.Is(err, ErrRecordTooLarge) {
			t.Errorf("%s of %d bytes: %v, want ErrRecordTooLarge", name, len(over), err)
		}
	}
	var before Sidecars
	var n int
	d.View(func(tx *Tx) (err error) {
		before, err = tx.Sidecars()
		h, _ := tx.History(0)
		n = len(h)
		return err
	})
	if err := d.Update(func(tx *Tx) error { return tx.PutVenue(fits) }); err != nil {
		t.Fatalf("a venue a record long: %v", err)
	}
	d.Close()
	d = mustOpen(t, kd, true)
	defer d.Close()
	err := d.View(func(tx *Tx) error {
		sc, err := tx.Sidecars()
		if err != nil {
			return err
		}
		h, err := tx.History(0)
		if *sc.Venue != fits || *sc.PiVersion != *before.PiVersion || len(h) != n || n == 0 {
			t.Errorf("after the refusals: venue of %d bytes, history of %d entries (were %d)", len(*sc.Venue), len(h), n)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}
