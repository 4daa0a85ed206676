package migrate

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"sessdb/internal/faults"
	"sessdb/store"
)

// TestAFailedKeysReportNamesWhatItChanged fails one key at each write
// boundary of both directions, once, and holds its report to the tree:
// each name Removed is gone from the key dir, and each name Written is
// there, so a failed report names what the run changed, not what it
// planned. Before, a to-db key failed before its commit listed every
// legacy sidecar removed (all still there), and a to-legacy key failed at
// its first rename listed meta.db removed and every legacy file written.
func TestAFailedKeysReportNamesWhatItChanged(t *testing.T) {
	key := store.Key("github", "acme/widget", "failed report")
	for _, p := range append(slices.Clone(toDBPoints), toLegacyPoints...) {
		if p == faults.ToLegacyUnlocked || p == faults.ToLegacyRolledForward {
			continue // met only with a promotion in flight
		}
		t.Run(string(p), func(t *testing.T) {
			toLegacy := p[:len("to-legacy")] == "to-legacy"
			root := layOutFailedReportKey(t, key, toLegacy)
			fired := false
			t.Cleanup(func() { faults.Set(nil) })
			faults.Set(migrateOnly(func(q faults.Point) error {
				if q == p && !fired {
					fired = true
					return errInjected
				}
				return nil
			}))
			got, _ := migrate(t, root, toLegacy, testOpts())
			faults.Set(nil)
			r := got[key]
			if !fired || r.Action != Failed {
				t.Fatalf("fired %v, report %+v; want the key failed", fired, r)
			}
			dir := filepath.Join(root, key)
			for _, n := range r.Removed {
				if _, err := os.Lstat(filepath.Join(dir, n)); !os.IsNotExist(err) {
					t.Errorf("the failed report says %s removed; it is there (%v): report %+v", n, err, r)
				}
			}
			for _, n := range r.Written {
				if _, err := os.Lstat(filepath.Join(dir, n)); err != nil {
					t.Errorf("the failed report says %s written; %v: report %+v", n, err, r)
				}
			}
		})
	}
}

// layOutFailedReportKey makes a root holding key in the legacy layout
// (a transcript and four sidecars, each an hour old) or, with toLegacy,
// that key migrated to meta.db, for a run to fail at a fault point.
func layOutFailedReportKey(t *testing.T, key string, toLegacy bool) string {
	legacyFiles := map[string]string{
		"current.jsonl": `{"type":"session","version":3,"id":"x","timestamp":"2026-11-30T10:00:00Z","cwd":"/w"}` + "\n",
		"pi-version":    "0.58.3", "venue": "local", "resume-chain": "2", "context": "1000 200000 anthropic/claude-sonnet-4-5",
	}
	root := t.TempDir()
	dir := filepath.Join(root, key)
	must(t, os.Mkdir(dir, 0o700))
	for n, b := range legacyFiles {
		must(t, os.WriteFile(filepath.Join(dir, n), []byte(b), 0o600))
		at := testNow.Add(-time.Hour)
		must(t, os.Chtimes(filepath.Join(dir, n), at, at))
	}
	if toLegacy {
		if got, sum := migrate(t, root, false, testOpts()); !sum.Complete() || got[key].Action != Migrated {
			t.Fatalf("to-db before the rollback: %+v", got[key])
		}
	}
	return root
}
