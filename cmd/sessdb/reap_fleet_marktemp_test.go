package main

import (
	"testing"

	"sessdb/fleet"
	"sessdb/fleet/shared"
)

// The temp of a fleet dir's mark that reap removed is a stray temp file
// (remove-temp, counted in swept), no key's (its key null), at its path
// under the dir; not an orphan of a key named after the temp.
func TestFleetReapNamesAMarkTempAStrayTemp(t *testing.T) {
	name := shared.MarkName + ".tmp-0123456789abcdef"
	actions, sum := fleetReapActions(fleet.ReapResult{Swept: []string{name}, Kept: 1}, "/srv/sessions", false)
	if len(actions) != 1 || actions[0].Action != reapRemoveTemp || actions[0].Key != nil || actions[0].Path != name || sum.Swept != 1 || sum.Orphans != 0 {
		key := "<nil>"
		if len(actions) == 1 && actions[0].Key != nil {
			key = *actions[0].Key
		}
		t.Fatalf("reap's actions %+v (key %s), summary %+v; want one remove-temp of %s, key null, counted in swept", actions, key, sum, name)
	}
}
