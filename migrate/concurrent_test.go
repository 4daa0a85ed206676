package migrate

import (
	"io"
	"path/filepath"
	"testing"

	"sessdb/db"
	"sessdb/internal/faults"
	"sessdb/internal/fsat"
)

// TestTwoProcessesAtOnce runs two child migrations on one tree, released
// together, in each direction: every key is converted by exactly one of
// them (meta.db's lock), the other finds it done, and the tree is what one
// clean run makes.
func TestTwoProcessesAtOnce(t *testing.T) {
	b := newCrashBed(t)
	for _, toLegacy := range []bool{false, true} {
		t.Run(direction(toLegacy), func(t *testing.T) {
			for round := range 3 {
				root, ref := b.start(t, toLegacy)
				var cs []*child
				for range 2 {
					cs = append(cs, startChild(t, direction(toLegacy), root, "SESSDB_WAIT=1", "SESSDB_WORKERS=2"))
				}
				for _, c := range cs {
					io.WriteString(c.stdin.(io.Writer), "go\n")
				}
				converted := map[string]int{}
				for _, c := range cs {
					rs, killed := c.reports(t)
					if killed || len(rs) == 0 {
						t.Fatalf("round %d: a child died or reported nothing", round)
					}
					for _, r := range rs {
						switch r.Action {
						case Migrated:
							converted[r.Key]++
						case Failed:
							t.Errorf("round %d: %s failed: %s", round, r.Key, r.Cause)
						}
					}
				}
				want, _ := migrateCount(t, b, toLegacy)
				for k, n := range converted {
					if n != 1 {
						t.Errorf("round %d: %s converted %d times", round, k, n)
					}
				}
				if len(converted) != want {
					t.Errorf("round %d: %d keys converted, a clean run converts %d", round, len(converted), want)
				}
				if d := diffStates(ref, treeState(t, root, false, false)); d != "" {
					t.Errorf("round %d: the tree differs from a clean run's:\n%s", round, d)
				}
			}
		})
	}
}

// migrateCount is how many keys a clean run in one direction converts.
func migrateCount(t *testing.T, b *crashBed, toLegacy bool) (int, Summary) {
	root, _ := b.start(t, toLegacy)
	_, sum := migrate(t, root, toLegacy, testOpts())
	return sum.Migrated, sum
}

// TestRivalRollbackBetweenLocks: ToLegacy lets go of a key's lock while
// the store rolls a pending promotion forward. A rival that rolls the key
// back in that gap, followed by a store open that makes meta.db again
// (empty: the store's writers create a missing one), must leave the key
// converted once: this run finds a made file, removes it, and reports
// Already. Before the file was compared with the one the run began with,
// this run took the empty file for an interrupted migration and reported
// the key migrated a second time (TestTwoProcessesAtOnce, under load).
func TestRivalRollbackBetweenLocks(t *testing.T) {
	b := newCrashBedOf(t, "pending promotion")
	root, ref := b.start(t, true)
	key := b.keys[0].key()
	var (
		fired   bool
		rival   map[string]Report
		hookErr error
	)
	t.Cleanup(func() { faults.Set(nil) })
	faults.Set(migrateOnly(func(p faults.Point) error {
		if p != faults.ToLegacyRolledForward || fired {
			return nil
		}
		fired = true
		rival = map[string]Report{}
		if _, err := ToLegacy(root, testOpts(), func(r Report) error { rival[r.Key] = r; return nil }); err != nil {
			hookErr = err
			return nil
		}
		kd, err := fsat.OpenDir(filepath.Join(root, key))
		if err != nil {
			hookErr = err
			return nil
		}
		defer kd.Close()
		d, err := db.OpenWriter(kd, filepath.Join(root, key, db.FileName), db.Options{})
		if err == nil {
			err = d.Close()
		}
		hookErr = err
		return nil
	}))
	got, _ := migrate(t, root, true, testOpts())
	faults.Set(nil)
	if !fired || hookErr != nil {
		t.Fatalf("the rival did not run between the locks: fired %v, %v", fired, hookErr)
	}
	if r := rival[key]; r.Action != Migrated {
		t.Fatalf("the rival: %+v", r)
	}
	if r := got[key]; r.Action != Already || len(r.Removed) != 0 {
		t.Errorf("this run, after the rival: %+v; want already, nothing reported removed", r)
	}
	if d := diffStates(ref, treeState(t, root, false, false)); d != "" {
		t.Errorf("the tree differs from a clean run's:\n%s", d)
	}
}
