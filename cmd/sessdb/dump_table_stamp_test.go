package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
	"unsafe"

	"sessdb/store"
)

// dump's table holds each row until the walk ends, for the widths: its
// stamps are held cut (forTable), to no more than a few times what their
// cells show, and the table is the same as with them whole. Before, each
// row held its stamps whole: 100 fleet keys with a pi version of 1.4 MB
// made a dump take 339 MB to show 12 characters of each.
func TestDumpTableHoldsStampsCutAndShowsTheSame(t *testing.T) {
	long := func(s string, n int) string { return strings.Repeat(s, n) }
	stamps := []string{
		"", "0.58.3", long("x", markWidth), long("x", markWidth+1),
		long("x", tableStampRunes), long("x", tableStampRunes+1), long("x", 1400000),
		long("é", 5000), long("\xff", 5000), long("\x01", 5000), long("ab\u202e", 2000),
		long("x", tableStampRunes-1) + "世界" + long("y", 100), // a cut after a rune of three bytes
		long("𝐱", markWidth+1),                               // runes of four bytes: a cut of tableStampRunes bytes would fit its cell
	}
	now := time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)
	at := now.Add(-time.Hour)
	for _, stamp := range stamps {
		pv, venue := stamp, stamp
		row := store.KeyReport{Name: store.Key("github", "stamps", "one"), PiVersion: &pv, Venue: &venue, LastPromotion: &at}
		held := forTable(row)
		for _, p := range []*string{held.PiVersion, held.Venue} {
			if len(*p) > 4*tableStampRunes {
				t.Errorf("a stamp of %d bytes held as %d bytes; want at most %d", len(stamp), len(*p), 4*tableStampRunes)
			}
			// A cut that is a slice of the stamp keeps all of it.
			if len(*p) < len(stamp) && unsafe.StringData(*p) == unsafe.StringData(stamp) {
				t.Errorf("a stamp of %d bytes held cut, in the whole one's bytes", len(stamp))
			}
		}
		var whole, cut bytes.Buffer
		if err := dumpTable(&whole, []store.KeyReport{row}, now, false, false); err != nil {
			t.Fatal(err)
		}
		if err := dumpTable(&cut, []store.KeyReport{held}, now, false, false); err != nil {
			t.Fatal(err)
		}
		if whole.String() != cut.String() {
			t.Errorf("a stamp of %d bytes: the table with it cut is\n%s\nwant\n%s", len(stamp), cut.String(), whole.String())
		}
	}
	if forTable(store.KeyReport{}).PiVersion != nil {
		t.Error("no stamp held as one")
	}
}
