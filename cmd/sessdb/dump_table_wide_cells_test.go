package main

import (
	"strings"
	"testing"
	"time"

	"sessdb/store"
)

// The wide key table's AGE and GEN cells: AGE is the conversation's age
// (its header's time) judged at the table's writing, beside PROMOTED's,
// and GEN the key's generation, 1 included. 36cf25c holds the two ages
// apart until the table is written (tableRow.ages); no test read AGE or a
// GEN of 1 back, so an AGE held in PROMOTED's slot (mutant C35: the cell
// left empty) and a GEN shown from 2 on (C39) passed them.
func TestTheWideKeyTablesAgeAndGenCells(t *testing.T) {
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	header, promoted := now.Add(-50*time.Hour), now.Add(-3*time.Hour)
	keys := keyTable{wide: true}
	keys.add(store.KeyReport{
		Name:          "4668107cac2e99b44415c5606b32ef14",
		Layout:        store.LayoutDB,
		Gen:           1,
		LastPromotion: &promoted,
		Transcript:    &store.TranscriptReport{Regular: true, Bytes: 10, ModTime: promoted, HeaderOK: true, HeaderTime: &header},
	})
	var b strings.Builder
	if err := keys.write(&b, now); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("the table %q: want a header and one row", b.String())
	}
	cell := func(title string) string {
		head, row := lines[0], lines[1]
		i := strings.Index(head, title)
		if i < 0 {
			t.Fatalf("no %s column in %q", title, head)
		}
		end := len(row)
		if j := strings.IndexFunc(head[i+len(title):], func(r rune) bool { return r != ' ' }); j >= 0 && i+len(title)+j < len(row) {
			end = i + len(title) + j
		}
		return strings.TrimSpace(row[i:end])
	}
	for title, want := range map[string]string{"AGE": ago(now, header), "PROMOTED": ago(now, promoted), "GEN": "1"} {
		if got := cell(title); got != want {
			t.Errorf("%s = %q, want %q (table %q)", title, got, want, b.String())
		}
	}
}
