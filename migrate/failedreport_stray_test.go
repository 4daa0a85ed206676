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

// A --to-legacy run removes a legacy sidecar meta.db holds no value for
// (a stray venue file a legacy writer left beside meta.db) as it writes
// the others; failed after that removal, its report lists the file
// removed, not written, and not dropped as unremoved. The other failed
// report tests' keys had a value for every sidecar, so no removal was
// ever made by writeLegacyDone, and a report that dropped (mutants M15,
// M20) or misfiled (M18) its removals passed them.
func TestAFailedToLegacyKeyListsTheStrayFileItRemoved(t *testing.T) {
	key := store.Key("github", "acme/widget", "stray sidecar")
	for _, p := range []faults.Point{faults.ToLegacyMtime, faults.ToLegacySynced} {
		t.Run(string(p), func(t *testing.T) {
			root := t.TempDir()
			dir := filepath.Join(root, key)
			must(t, os.Mkdir(dir, 0o700))
			for n, b := range map[string]string{
				"current.jsonl": `{"type":"session","version":3,"id":"x","timestamp":"2026-11-30T10:00:00Z","cwd":"/w"}` + "\n",
				"pi-version":    "0.58.3",
			} {
				must(t, os.WriteFile(filepath.Join(dir, n), []byte(b), 0o600))
				at := testNow.Add(-time.Hour)
				must(t, os.Chtimes(filepath.Join(dir, n), at, at))
			}
			if got, sum := migrate(t, root, false, testOpts()); !sum.Complete() || got[key].Action != Migrated {
				t.Fatalf("to-db: %+v", got[key])
			}
			must(t, os.WriteFile(filepath.Join(dir, "venue"), []byte("local"), 0o600))
			dry := testOpts()
			dry.DryRun = true
			plans, _ := migrate(t, root, true, dry)
			if plan := plans[key]; plan.Action != Migrated || !slices.Contains(plan.Removed, "venue") {
				t.Fatalf("the dry run = %+v; want venue among the removals", plan)
			}
			fired := false
			t.Cleanup(func() { faults.Set(nil) })
			faults.Set(migrateOnly(func(q faults.Point) error {
				if q == p && !fired {
					fired = true
					return errInjected
				}
				return nil
			}))
			got, _ := migrate(t, root, true, testOpts())
			faults.Set(nil)
			r := got[key]
			if !fired || r.Action != Failed {
				t.Fatalf("fired %v, report %+v; want the key failed", fired, r)
			}
			if _, err := os.Lstat(filepath.Join(dir, "venue")); !os.IsNotExist(err) {
				t.Fatalf("venue after the run: %v; want it removed", err)
			}
			if !slices.Contains(r.Removed, "venue") || slices.Contains(r.Written, "venue") {
				t.Errorf("the failed report %+v; want venue listed removed, not written", r)
			}
		})
	}
}
