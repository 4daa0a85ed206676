package migrate

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"sessdb/db"
	"sessdb/internal/durable/durabletest"
)

// The sweep of a killed run's meta.db temps removes one with its flock
// held, in both directions, as store's removals do
// (TestATempTakenForDebrisIsRemovedWithItsFlockHeld): a creator stalled
// between the temp's create and its flock then finds its name gone once
// it has the flock, and makes its temp again (db.TakeTemp).
func TestTheSweepRemovesAMetaDBTempWithItsFlockHeld(t *testing.T) {
	root, keys := newCorpus(t)
	key := keyNamed(keys, "plain")
	name := db.TempPrefix + "00000000000000f2"
	p := filepath.Join(root, key, name)
	for _, toLegacy := range []bool{false, true} {
		must(t, os.WriteFile(p, nil, 0o600))
		old := time.Now().Add(-2 * tempGrace)
		must(t, os.Chtimes(p, old, old))
		seen := &durabletest.FlockSeen{}
		opts := testOpts()
		opts.disk = durabletest.FlockAtRemoval{Name: name, Seen: seen}
		got, _ := migrate(t, root, toLegacy, opts)
		if r := got[key]; !slices.Contains(r.Removed, name) || !seen.Asked {
			t.Fatalf("%s: removed %v (through the disk: %v); want the temp among them", direction(toLegacy), r.Removed, seen.Asked)
		}
		if seen.Free {
			t.Errorf("%s: the sweep removed the temp with its flock free for a creator to take", direction(toLegacy))
		}
	}
}
