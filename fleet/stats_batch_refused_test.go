package fleet

import (
	"fmt"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"sessdb/gates"
	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// A batch's read that etcd refuses, as it refuses a transaction of more
// operations than its --max-txn-ops (code InvalidArgument, "too many
// operations in txn request"), is no failure of the walk: the batch's
// keys are read one at a time, and every key and promotion is counted.
// (TestStatsReadsTheHistoriesInBatches's failed read is "leader changed",
// which the batch's own retry answers.)
func TestStatsReadsABatchEtcdRefusesAKeyAtATime(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start(t, etcdtest.Options{Members: 1, InProcess: true}) // its faults need the interceptor
	f := newFixture(t, c)
	const keys = 5
	for i := range keys {
		f.run(store.Key("github", "stats-refused", fmt.Sprint(i)), fmt.Sprint("m", i))
	}
	c.LoseNextAs(txnMethod, 0, 1, codes.InvalidArgument)
	st, err := f.b.Stats(t.Context(), StatsOptions{Window: time.Hour, Bounds: gates.Bounds{TTL: 14 * 24 * time.Hour}})
	if err != nil {
		t.Fatalf("stats, its first batch's read refused: %v; want every key read alone", err)
	}
	if st.Keys != keys || st.Promotions.Count(nil) != keys || statTally(st.Verdicts, string(gates.Resumed)) != keys {
		t.Errorf("keys %d, %d promotions, verdicts %v; want %d keys, each resumed, each with its promotion", st.Keys, st.Promotions.Count(nil), st.Verdicts, keys)
	}
}
