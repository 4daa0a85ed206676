package migrate

import (
	"io"
	"testing"
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
