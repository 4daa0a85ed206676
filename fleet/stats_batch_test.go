package fleet

import (
	"fmt"
	"testing"
	"time"

	"sessdb/fleet/etcdmeta"
	"sessdb/gates"
	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// txnMethod is etcd's transaction, which every read of a key's record
// with its history is.
const txnMethod = "/etcdserverpb.KV/Txn"

// A stats walk reads its keys' records and histories again a batch at a
// time (etcdmeta.GetManyMost keys an etcd transaction), not a
// transaction a key: 40 keys are read in two. Where a batch's read fails
// for a leader change, the batch is read again, and every key and
// promotion is still counted.
func TestStatsReadsTheHistoriesInBatches(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start(t, etcdtest.Options{Members: 1, InProcess: true}) // its faults need the interceptor
	f := newFixture(t, c)
	const keys = 40
	for i := range keys {
		f.run(store.Key("github", "stats-batch", fmt.Sprint(i)), fmt.Sprint("m", i))
	}
	stats := func() {
		t.Helper()
		st, err := f.b.Stats(t.Context(), StatsOptions{Window: time.Hour, Bounds: gates.Bounds{TTL: 14 * 24 * time.Hour}})
		if err != nil {
			t.Fatal(err)
		}
		if st.Keys != keys || st.Promotions.Count(nil) != keys || statTally(st.Verdicts, string(gates.Resumed)) != keys {
			t.Errorf("keys %d, %d promotions, verdicts %v; want %d keys, each resumed, each with its promotion", st.Keys, st.Promotions.Count(nil), st.Verdicts, keys)
		}
	}

	// The transactions the walk sends: the member lets the next 100
	// through and fails the one after; the test's own empty
	// transactions then count how many of the 100 the walk left.
	const let = 100
	c.FailNext(txnMethod, let, 1)
	stats()
	cli := c.Client(t)
	left := 0
	for left <= let {
		if _, err := cli.Txn(t.Context()).Commit(); err != nil {
			break
		}
		left++
	}
	want := (keys + etcdmeta.GetManyMost - 1) / etcdmeta.GetManyMost
	switch {
	case left > let:
		t.Errorf("the walk of %d keys sent more than %d transactions (the member's failure was spent); want %d, one for each %d keys", keys, let, want, etcdmeta.GetManyMost)
	case let-left > want:
		t.Errorf("the walk of %d keys sent %d transactions; want %d, one for each %d keys", keys, let-left, want, etcdmeta.GetManyMost)
	}

	// The first batch's read fails as a leader change fails it
	// (Unavailable): prefetch tries the batch again, and every key is
	// still counted. (A read etcd refuses, as a smaller --max-txn-ops
	// refuses it, is TestStatsReadsABatchEtcdRefusesAKeyAtATime's.)
	c.FailNext(txnMethod, 0, 1)
	stats()
}
