package fleet

import (
	"math"
	"slices"
	"strings"
	"testing"

	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// A fleet key whose newest history entry is at the name above the last
// slot, 2^64-1 (all f), takes no write, as one in the last slot takes
// none. sessdb makes no such entry now, but a sessdb before §5j's fix
// wrote one (its guarded write claimed that slot, and Create took a key
// dir's history at that seq as given), and another binary may. check
// reports the entry at its own path, and --repair numbers the history
// again in place, the entry kept with the others, the record not
// rewritten; the key then takes its next promotion. Before, check said
// "history entry name "ffffffffffffffff"" of the key's history and
// --repair left it: "remove the entry with etcdctl del", the newest
// entry lost to settle it.
func TestARepairRenumbersAHistoryWhoseNewestEntryIsAboveTheLastSlot(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	key := store.Key("github", "renumber", "all-f")
	f.run(key, "one")
	f.run(key, "two")
	vals := f.toSlotsEndingAt(c, key, math.MaxUint64)
	before, err := f.b.meta.GetRecord(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	path := f.prefix + "/history/" + key + "/ffffffffffffffff"
	var found []store.Finding
	if _, err := f.b.Check(t.Context(), CheckOptions{}, func(fd store.Finding) error {
		found = append(found, fd)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(found) != 1 || found[0].Path != path || found[0].Kind != store.KindRecordUndecodable || !strings.Contains(found[0].Detail, "check --repair numbers the history again") {
		t.Fatalf("check: %+v; want the entry at %s reported, for check --repair", found, path)
	}
	found = f.repairAll(f.b)
	want := "numbered again in place: the newest 2 entries at slots 1 to 2, each as it was; the record is not rewritten (its revision, a job's base, stays) and the key takes promotions again"
	if len(found) != 1 || found[0].Path != path || !found[0].Repaired || found[0].Remains || found[0].Repair != want {
		t.Fatalf("check --repair: %+v; want the history numbered again, Repair %q", found, want)
	}
	seqs, got := f.historyValues(c, key)
	if !slices.Equal(seqs, []string{"0000000000000001", "0000000000000002"}) || !slices.Equal(got, vals) {
		t.Fatalf("history after the repair: %v; want the two entries at 1 and 2, each as it was", seqs)
	}
	after, err := f.b.meta.GetRecord(t.Context(), key)
	if err != nil || after.Rev != before.Rev {
		t.Fatalf("record at revision %d after the repair (%v), want %d: unchanged", after.Rev, err, before.Rev)
	}
	if res := f.run(key, "three"); res.Gen != 3 {
		t.Fatalf("the promotion after the repair: %+v, want gen 3", res)
	}
	f.holds(key, "three", 3)
}
