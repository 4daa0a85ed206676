package main

import (
	"errors"
	"testing"

	"sessdb/store"
)

// historyRows.write returns the error of a note line it could not write,
// as writeTable does a row's: notes are written after the table, one
// write each, and a dropped error (mutant C51) passed every test.
func TestTheHistoryTablesNotesReturnTheirWriteError(t *testing.T) {
	rows := historyRows{only: "4668107cac2e99b44415c5606b32ef14"}
	rows.add(store.KeyReport{Name: "4668107cac2e99b44415c5606b32ef14", Layout: store.LayoutLegacy})
	if len(rows.notes) != 1 {
		t.Fatalf("notes %q, want the key's one", rows.notes)
	}
	lost := errors.New("disk full")
	if err := rows.write(&failAfter{n: 1, err: lost}); !errors.Is(err, lost) {
		t.Fatalf("a writer that fails at the note: write = %v, want %v", err, lost)
	}
}
