package fleet

import (
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"sessdb/gates"
	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// A key reaped while stats walks (listed, then its record and history
// removed before its turn, as a reap removes them) is not counted: not a
// key of the fleet, absent, as a history with no record is, nor its
// promotion; the key listed beside it is.
func TestStatsLeavesOutAKeyReapedWhileItWalks(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	reaped, kept := store.Key("github", "stats-reaped", "gone"), store.Key("github", "stats-reaped", "kept")
	f.run(reaped, "r")
	f.run(kept, "k")
	cli := c.Client(t)
	gone := false
	f.b.hook = func(p, k string) error {
		if p == hookListed && k == reaped {
			for _, name := range []string{f.prefix + "/record/" + reaped, f.prefix + "/history/" + reaped + "/"} {
				if _, err := cli.Delete(t.Context(), name, clientv3.WithPrefix()); err != nil {
					t.Error(err)
				}
			}
			gone = true
		}
		return nil
	}
	defer func() { f.b.hook = nil }()
	st, err := f.b.Stats(t.Context(), StatsOptions{Window: time.Hour, Bounds: gates.Bounds{TTL: 14 * 24 * time.Hour}})
	if err != nil || !gone {
		t.Fatalf("stats: %v (the key reaped under it: %v)", err, gone)
	}
	if st.Entries != 1 || st.Keys != 1 || statTally(st.Layouts, "etcd") != 1 || statTally(st.Verdicts, string(gates.Absent)) != 0 || st.Promotions.Count(nil) != 1 {
		t.Errorf("entries %d, keys %d, layouts %v, verdicts %v, %d promotions; want the kept key alone, resumed, its one promotion", st.Entries, st.Keys, st.Layouts, st.Verdicts, st.Promotions.Count(nil))
	}
}
