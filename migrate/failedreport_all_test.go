package migrate

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"sessdb/internal/faults"
	"sessdb/store"
)

// TestAFailedKeysReportNamesEverythingItChanged is the converse of
// TestAFailedKeysReportNamesWhatItChanged: a key failed at each write
// boundary of both directions lists every file of its plan that the run
// did remove, and every file of its plan it did write, not a part of
// them. A report that named none of its changes would pass the other test
// (nothing listed is wrong) and leave an operator thinking a half-done key
// untouched.
func TestAFailedKeysReportNamesEverythingItChanged(t *testing.T) {
	key := store.Key("github", "acme/widget", "failed report whole")
	contents := func(t *testing.T, dir string) map[string][]byte {
		ents, err := os.ReadDir(dir)
		must(t, err)
		m := map[string][]byte{}
		for _, e := range ents {
			if e.Type().IsRegular() {
				b, err := os.ReadFile(filepath.Join(dir, e.Name()))
				must(t, err)
				m[e.Name()] = b
			}
		}
		return m
	}
	for _, p := range append(slices.Clone(toDBPoints), toLegacyPoints...) {
		if p == faults.ToLegacyUnlocked || p == faults.ToLegacyRolledForward {
			continue // met only with a promotion in flight
		}
		t.Run(string(p), func(t *testing.T) {
			toLegacy := p[:len("to-legacy")] == "to-legacy"
			root := layOutFailedReportKey(t, key, toLegacy)
			dir := filepath.Join(root, key)
			dry := testOpts()
			dry.DryRun = true
			plans, _ := migrate(t, root, toLegacy, dry)
			plan := plans[key]
			if plan.Action != Migrated || len(plan.Removed) == 0 {
				t.Fatalf("the dry run = %+v; want a plan that removes files", plan)
			}
			before := contents(t, dir)
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
			after := contents(t, dir)
			for _, n := range plan.Removed {
				if _, err := os.Lstat(filepath.Join(dir, n)); os.IsNotExist(err) && !slices.Contains(r.Removed, n) {
					t.Errorf("%s is gone, and the failed report does not list it removed: report %+v", n, r)
				}
			}
			for _, n := range plan.Written {
				if b, ok := after[n]; ok && !bytes.Equal(b, before[n]) && !slices.Contains(r.Written, n) {
					t.Errorf("%s was written, and the failed report does not list it: report %+v", n, r)
				}
			}
		})
	}
}
