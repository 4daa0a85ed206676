package main

import (
	"strings"
	"testing"
	"time"

	"sessdb/store"
)

// A wide history table uncuts its columns on a copy of historyCols, not on
// historyCols: a later history table in the same process (a test binary,
// a program calling the CLI's commands in turn) is cut to dumpWidth as
// before. 36cf25c's write clones them; no test wrote a wide table and
// then a narrow one, so writing on historyCols itself (mutant C50) passed.
func TestAWideHistoryTableLeavesTheNextOneCut(t *testing.T) {
	long := strings.Repeat("j", 200)
	write := func(wide bool) string {
		rows := historyRows{wide: wide}
		rows.add(store.KeyReport{Name: "4668107cac2e99b44415c5606b32ef14", History: []store.HistoryReport{{
			Gen: 1, At: time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC), Outcome: "promoted", Job: long,
		}}})
		var b strings.Builder
		if err := rows.write(&b); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	before := write(false)
	if !strings.Contains(write(true), long) {
		t.Fatalf("the wide table does not hold the job whole")
	}
	if after := write(false); after != before || strings.Contains(after, long) {
		t.Fatalf("the table after a wide one:\n%s\nwant as before it:\n%s", after, before)
	}
}
