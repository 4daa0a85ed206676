package fleet

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"sessdb/fleet/etcdmeta"
	"sessdb/internal/etcdtest"
	"sessdb/store"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// A fleet history in its last slot that holds one entry more than the
// ring is numbered again to the ring's newest, the one older entry
// removed, and the repair says so in the singular: "the 1 older ones"
// was its note before.
func TestARepairOfAFleetHistoryOnePastTheRingSaysTheOlderOne(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	key := store.Key("github", "renumber", "one past the ring")
	f.run(key, "one")
	f.run(key, "two")
	vals := f.toLastSlot(c, key)
	dir := f.prefix + "/history/" + key + "/"
	var ops []clientv3.Op
	for i := range etcdmeta.HistoryLimit + 1 - len(vals) {
		ops = append(ops, clientv3.OpPut(fmt.Sprintf("%s%016x", dir, uint64(math.MaxUint64-1)-uint64(len(vals)+i)), vals[0]))
	}
	if _, err := c.Client(t).Txn(t.Context()).Then(ops...).Commit(); err != nil {
		t.Fatal(err)
	}
	if seqs, _ := f.historyValues(c, key); len(seqs) != etcdmeta.HistoryLimit+1 {
		t.Fatalf("the history before the repair holds %d entries, want %d", len(seqs), etcdmeta.HistoryLimit+1)
	}
	found := f.repairAll(f.b)
	want := fmt.Sprintf("numbered again in place: the newest %d entries at slots 1 to %d, each as it was, the older one (below the ring of %d a write keeps) removed;", etcdmeta.HistoryLimit, etcdmeta.HistoryLimit, etcdmeta.HistoryLimit)
	if len(found) != 1 || !found[0].Repaired || !strings.HasPrefix(found[0].Repair, want) {
		t.Fatalf("check --repair: %+v; want Repair beginning %q", found, want)
	}
	if seqs, _ := f.historyValues(c, key); len(seqs) != etcdmeta.HistoryLimit {
		t.Fatalf("the history after the repair holds %d entries, want %d", len(seqs), etcdmeta.HistoryLimit)
	}
}
