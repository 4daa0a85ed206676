package fleet

import (
	"os"
	"path/filepath"
	"testing"

	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// Check's summary counts every entry it examined, and among them the
// keys: a name in the transcripts dir that is no key is an entry, not a
// key (store.CheckSummary), as a sessions root's check counts them.
func TestCheckCountsKeysApartFromOtherEntries(t *testing.T) {
	etcdtest.Beside(t)
	f := newFixture(t, etcdtest.Start1(t))
	f.run(store.Key("github", "check-count", "one"), "one")
	f.run(store.Key("github", "check-count", "two"), "two")
	if err := os.Mkdir(filepath.Join(f.dir, "not-a-key"), 0o700); err != nil {
		t.Fatal(err)
	}
	sum, err := f.b.Check(t.Context(), CheckOptions{}, nil)
	if err != nil || sum.Entries != 3 || sum.Keys != 2 {
		t.Fatalf("check = %+v, %v; want 3 entries, 2 of them keys", sum, err)
	}
}

// Check's summary counts the problems that remain after it apart from
// those it repaired (store.CheckSummary.Remaining): a history in its last
// slot found by a check is a problem that remains; found and numbered
// again by check --repair, a problem repaired, none remaining. Before
// (mutant c08 of the fleet sweep's list, count()'s `if f.Remains`
// negated), no fleet test read Remaining: the mutant counted the
// repaired problem as remaining and the one left as not.
func TestCheckCountsTheProblemsThatRemain(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	key := store.Key("github", "check-count", "remaining")
	f.run(key, "one")
	f.toLastSlot(c, key)
	sum, err := f.b.Check(t.Context(), CheckOptions{}, nil)
	if err != nil || sum.Problems != 1 || sum.Remaining != 1 || sum.Repaired != 0 {
		t.Fatalf("check = %+v, %v; want 1 problem, remaining", sum, err)
	}
	sum, err = f.b.Check(t.Context(), CheckOptions{Repair: true}, nil)
	if err != nil || sum.Problems != 1 || sum.Remaining != 0 || sum.Repaired != 1 {
		t.Fatalf("check --repair = %+v, %v; want 1 problem, repaired, none remaining", sum, err)
	}
}
