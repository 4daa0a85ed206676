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
// is not.
func TestStatsCountsAFullRingWithAnEntryThatDoesNotDecodeAsTruncated(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	full, short := store.Key("github", "truncated", "full"), store.Key("github", "truncated", "short")
	for i := range etcdmeta.HistoryLimit + 3 {
		f.run(full, fmt.Sprint("f", i))
	}
	for i := range etcdmeta.HistoryLimit - 1 {
		f.run(short, fmt.Sprint("s", i))
	}
	cli := c.Client(t)
	for _, k := range []string{full, short} {
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
	if got, want := p.Count(nil), int64(2*etcdmeta.HistoryLimit-1-2); got != want {
		t.Errorf("%d entries counted; want %d (the entries that decode)", got, want)
	}
	if p.TruncatedKeys != 1 {
		t.Errorf("TruncatedKeys %d; want 1: the full ring, whose %d entries are all inside the window though one does not decode", p.TruncatedKeys, etcdmeta.HistoryLimit)
	}
}
