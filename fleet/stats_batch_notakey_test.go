package fleet

import (
	"context"
	"fmt"
	"testing"
	"time"

	"sessdb/fleet/etcdmeta"
	"sessdb/gates"
	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// A record whose name is not a key (put by hand, or another tool's) among
// a batch's is left out of the batch's read, not sent in it: GetMany
// refuses a batch holding one, and the batch's every key was then read
// alone, a transaction each. Here 40 keys and one such name: the walk
// reads the keys in two transactions, as without it, and counts each.
func TestAWalkLeavesANameThatIsNoKeyOutOfItsBatches(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start(t, etcdtest.Options{Members: 1, InProcess: true}) // its faults need the interceptor
	f := newFixture(t, c)
	const keys = 40
	for i := range keys {
		f.run(store.Key("github", "stats-notakey", fmt.Sprint(i)), fmt.Sprint("m", i))
	}
	if _, err := c.Client(t).Put(context.Background(), f.b.meta.RecordKey("0-not-a-key"), "x"); err != nil {
		t.Fatal(err)
	}
	// As TestStatsReadsTheHistoriesInBatches counts them: the member lets
	// the next 100 transactions through and fails the one after, and the
	// test's own empty ones count how many of the 100 the walk left.
	const let = 100
	c.FailNext(txnMethod, let, 1)
	st, err := f.b.Stats(t.Context(), StatsOptions{Window: time.Hour, Bounds: gates.Bounds{TTL: 14 * 24 * time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	if st.Keys != keys || st.Promotions.Count(nil) != keys {
		t.Errorf("keys %d, %d promotions; want %d keys, each with its promotion (the name that is no key not counted)", st.Keys, st.Promotions.Count(nil), keys)
	}
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
		t.Errorf("the walk of %d keys and a name that is no key sent more than %d transactions (the member's failure was spent); want %d, one for each %d keys", keys, let, want, etcdmeta.GetManyMost)
	case let-left > want:
		t.Errorf("the walk of %d keys and a name that is no key sent %d transactions; want %d, one for each %d keys", keys, let-left, want, etcdmeta.GetManyMost)
	}
}
