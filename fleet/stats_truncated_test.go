package fleet

import (
	"fmt"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"sessdb/fleet/etcdmeta"
	"sessdb/gates"
	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// A key whose ring is full (HistoryLimit entries in etcd) and wholly
// inside the window is counted in TruncatedKeys though one of its entries
// does not decode: older entries were pushed out all the same, so its
// count is a lower bound. A ring one short of full, with such an entry,
// is not. A key with a history and no record is counted alike. A full
// ring none of whose entries decode has no oldest entry to judge: not
// counted, and no crash.
func TestStatsCountsAFullRingWithAnEntryThatDoesNotDecodeAsTruncated(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	full, short, stray := store.Key("github", "truncated", "full"), store.Key("github", "truncated", "short"), store.Key("github", "truncated", "stray")
	for i := range etcdmeta.HistoryLimit + 3 {
		f.run(full, fmt.Sprint("f", i))
		f.run(stray, fmt.Sprint("h", i))
	}
	for i := range etcdmeta.HistoryLimit - 1 {
		f.run(short, fmt.Sprint("s", i))
	}
	none := store.Key("github", "truncated", "none")
	for i := range etcdmeta.HistoryLimit {
		f.run(none, fmt.Sprint("n", i))
	}
	cli := c.Client(t)
	resp, err := cli.Get(t.Context(), f.prefix+"/history/"+none+"/", clientv3.WithPrefix())
	if err != nil || len(resp.Kvs) != etcdmeta.HistoryLimit {
		t.Fatalf("%s's history: %v, %v", none, resp, err)
	}
	for _, kv := range resp.Kvs {
		if _, err := cli.Put(t.Context(), string(kv.Key), "\xc1"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cli.Delete(t.Context(), f.prefix+"/record/"+stray); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{full, short, stray} {
		resp, err := cli.Get(t.Context(), f.prefix+"/history/"+k+"/", clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByKey, clientv3.SortAscend))
		if err != nil {
			t.Fatal(err)
		}
		// An entry in the middle of the ring: the oldest that decodes is
		// still the ring's oldest.
		if _, err := cli.Put(t.Context(), string(resp.Kvs[len(resp.Kvs)/2].Key), "\xc1"); err != nil {
			t.Fatal(err)
		}
	}
	st, err := f.b.Stats(t.Context(), StatsOptions{Window: time.Hour, Bounds: gates.Bounds{TTL: 14 * 24 * time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	p := st.Promotions
	if got, want := p.Count(nil), int64(3*etcdmeta.HistoryLimit-1-3); got != want {
		t.Errorf("%d entries counted; want %d (the entries that decode)", got, want)
	}
	if p.TruncatedKeys != 2 || statTally(st.Verdicts, string(gates.Absent)) != 1 {
		t.Errorf("TruncatedKeys %d, verdicts %v; want 2: the full rings (one a history with no record, absent), whose %d entries are all inside the window though one does not decode", p.TruncatedKeys, st.Verdicts, etcdmeta.HistoryLimit)
	}
}
