package main

import (
	"strings"
	"testing"
	"time"

	"sessdb/store"
)

// The history table's cells are made printable as its key is read, as the
// key table's are: a job id or an outcome from the disk holding a newline
// or an escape is shown escaped, one line an entry, never a line break or
// a terminal's control sequence. 36cf25c moved the cells' making into
// historyRows.add; no test gave it a cell to escape, so an add that kept
// them raw (mutant C46) passed every history test.
func TestTheHistoryTableEscapesItsCells(t *testing.T) {
	rows := historyRows{wide: true}
	rows.add(store.KeyReport{Name: "4668107cac2e99b44415c5606b32ef14", History: []store.HistoryReport{{
		Gen: 1, At: time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC), Outcome: "promoted\x1b[2J", Job: "job\nsecond line",
	}}})
	var b strings.Builder
	if err := rows.write(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if strings.Count(out, "\n") != 2 || strings.ContainsRune(out, '\x1b') {
		t.Fatalf("the history table %q: want a header and one line, no escape byte", out)
	}
}
