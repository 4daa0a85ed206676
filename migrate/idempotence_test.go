package migrate

import (
	"context"
	"errors"
	"path/filepath"
	"sync/atomic"
	"testing"

	"sessdb/internal/faults"
	"sessdb/store"
)

// TestRerunsKeepTheVerdicts: migrate twice, roll back, migrate again with
// that run interrupted in the middle of a key (a fault between two legacy
// removals, and the run's context cancelled there), re-run it; then roll
// back the same way. After every run, finished or not, every key of the
// corpus gets the verdicts it had on the legacy layout, for a cross
// section of the corpus and of the profiles; each re-run finishes what was left and a run
// after it finds nothing to do.
func TestRerunsKeepTheVerdicts(t *testing.T) {
	// A cross section of the corpus: odd values of each file, both
	// layouts, leftovers; the whole corpus is the verdict test's.
	root := filepath.Join(t.TempDir(), "sessions")
	must(t, osMkdir(root))
	corpus := buildCorpus(t, root, "plain", "venue link", "venue fifo", "pi absent", "chain huge", "context tabs and case",
		"lock stale", "temps", "transcript link", "transcript expired", "interrupted before commit", "mixed", "migrated long ago")
	var keys []string
	for _, c := range corpus {
		if !c.unsettled {
			keys = append(keys, c.key())
		}
	}
	// Two columns of the table (all of it is
	// TestVerdictsSurviveMigrationAndRollback's): every bound, and none.
	var ps []profile
	for _, p := range profiles() {
		if p.job == (store.Job{PiVersion: testPi, Venue: "local", Model: "anthropic/claude-x"}) {
			ps = append(ps, p)
		}
	}
	if len(ps) != 2 {
		t.Fatalf("%d profiles", len(ps))
	}
	before := verdicts(t, root, keys, ps)
	check := func(phase string) {
		t.Helper()
		after := verdicts(t, root, keys, ps)
		n := 0
		for k, v := range before {
			if after[k] != v {
				if n++; n <= 10 {
					t.Errorf("%s: %s: %s, was %s", phase, k, after[k], v)
				}
			}
		}
	}
	interrupted := func(toLegacy bool, point faults.Point) {
		t.Helper()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var hits atomic.Int32
		t.Cleanup(func() { faults.Set(nil) })
		faults.Set(migrateOnly(func(p faults.Point) error {
			if p != point {
				return nil
			}
			if hits.Add(1) == 7 {
				cancel()
				return errors.New("interrupted")
			}
			return nil
		}))
		run := ToDBContext
		if toLegacy {
			run = ToLegacyContext
		}
		opts := testOpts()
		opts.Workers = 2
		sum, err := run(ctx, root, opts, func(Report) error { return nil })
		faults.Set(nil)
		if hits.Load() < 7 || sum.Failed == 0 || !errors.Is(err, context.Canceled) || !sum.Interrupted {
			t.Fatalf("%s: not interrupted mid-key: %d hits, %+v, %v", direction(toLegacy), hits.Load(), sum, err)
		}
	}
	finishes := func(toLegacy bool, what string) {
		t.Helper()
		if _, sum := migrate(t, root, toLegacy, testOpts()); sum.Failed != 0 || sum.Migrated == 0 {
			t.Fatalf("%s: %+v", what, sum)
		}
		check(what)
		if _, sum := migrate(t, root, toLegacy, testOpts()); sum.Failed != 0 || sum.Migrated != 0 {
			t.Errorf("%s, run again: %+v, want nothing to do", what, sum)
		}
	}

	finishes(false, "migrate")
	finishes(true, "rollback")
	interrupted(false, faults.ToDBRemoved)
	check("migrate interrupted")
	finishes(false, "migrate re-run")
	interrupted(true, faults.ToLegacyRenamed)
	check("rollback interrupted")
	finishes(true, "rollback re-run")
}
