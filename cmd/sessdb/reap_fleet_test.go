package main

import (
	"errors"
	"testing"

	"sessdb/fleet"
	"sessdb/store"
)

// A fleet's reap summary counts a key reap could not handle as a sessions
// root's does: failed, not kept (docs/json.md reap.summary; fleet.Reap
// counts it in Skipped, never in Kept), and an entry and a key. Before,
// the fleet's summary left it out of entries and keys, and fleet.Reap had
// counted it in kept too.
func TestFleetReapSummaryCountsAFailedKeyAsTheRootDoes(t *testing.T) {
	old, fresh := store.Key("github", "reap", "old"), store.Key("github", "reap", "fresh")
	_, onFleet := fleetReapActions(fleet.ReapResult{Kept: 1, Skipped: map[string]error{old: errors.New("injected")}}, "/t", false)
	_, onRoot := reapActions(store.ReapResult{Kept: 1, Skipped: map[string]string{old: "injected"}, Failed: []string{old}}, "/r", false)
	if onFleet != onRoot || onFleet.Kept != 1 || onFleet.Failed != 1 {
		t.Errorf("one key kept (%s), one failed (%s): on a fleet %+v, on a root %+v", fresh, old, onFleet, onRoot)
	}
}

// A key reap removed whose key dir in the transcripts dir it then could
// not read (fleet.Reap reports it in Removed and in Skipped) is one entry
// and one key, as docs/json.md's reap.summary counts names.
func TestFleetReapSummaryCountsARemovedAndFailedKeyOnce(t *testing.T) {
	old := store.Key("github", "reap", "old")
	for _, dry := range []bool{false, true} {
		_, sum := fleetReapActions(fleet.ReapResult{Removed: []string{old}, Skipped: map[string]error{old: errors.New("open: permission denied")}}, "/t", dry)
		if sum.Entries != 1 || sum.Keys != 1 || sum.Removed != 1 || sum.Failed != 1 {
			t.Errorf("dry run %v: %+v; want one entry and one key, removed and failed", dry, sum)
		}
	}
}
