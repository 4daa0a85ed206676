package fleet

import (
	"testing"
	"time"

	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// check --repair that finds a key's lock held (another reap or repair)
// says so of every finding it would have settled, a history in its last
// slot among them, even where that is the key's only finding: each
// finding of a repairing check says what was done with it (repair's doc),
// and one left without a word reads as if the repair had not looked.
func TestARepairOfALockedKeySaysSoOfItsHistoryInTheLastSlot(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	f := newFixture(t, c, func(cfg *Config) { cfg.LockWait = time.Second }) // the wait for the other holder
	key := store.Key("github", "renumber", "locked")
	f.run(key, "one")
	f.toLastSlot(c, key)
	other := f.open()
	unlock, _, err := other.meta.Lock(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	found := f.repairAll(f.b)
	want := "left as is: the key's lock is held by another reap or repair; run check again"
	if len(found) != 1 || found[0].Path != f.b.meta.Prefix()+"/history/"+key+"/fffffffffffffffe" || found[0].Repair != want || found[0].Repaired || !found[0].Remains {
		t.Fatalf("check --repair of a locked key: %+v; want its last-slot finding alone, Repair %q, remaining", found, want)
	}
}
