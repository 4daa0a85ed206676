package fleet

import (
	"testing"
	"time"

	"sessdb/gates"
	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// Stats judges every verdict, dates its figures and ends its window by
// its own clock (StatsOptions.Now, the CLI's --at), not the host's: a
// key promoted now is expired to a clock past the TTL, and its promotion
// is outside a window that ends there.
func TestStatsJudgesAndCountsByItsClock(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	key := store.Key("github", "stats-clock", "a")
	f.run(key, "a")
	later := time.Now().Add(15 * 24 * time.Hour).Truncate(time.Second)
	bounds := gates.Bounds{TTL: 14 * 24 * time.Hour}
	st, err := f.b.Stats(t.Context(), StatsOptions{Window: time.Hour, Bounds: bounds, Now: func() time.Time { return later }})
	if err != nil {
		t.Fatal(err)
	}
	if !st.At.Equal(later) || statTally(st.Verdicts, string(gates.Expired)) != 1 || st.Promotions.Count(nil) != 0 {
		t.Errorf("stats at %v: at %v, verdicts %v, %d promotions; want that time, the key expired, none in the hour before it", later, st.At, st.Verdicts, st.Promotions.Count(nil))
	}
	// And by the host's clock when none is given: the key resumes, its
	// promotion inside the hour.
	st, err = f.b.Stats(t.Context(), StatsOptions{Window: time.Hour, Bounds: bounds})
	if err != nil {
		t.Fatal(err)
	}
	if statTally(st.Verdicts, string(gates.Resumed)) != 1 || st.Promotions.Count(nil) != 1 {
		t.Errorf("stats now: verdicts %v, %d promotions; want the key resumed, its one promotion", st.Verdicts, st.Promotions.Count(nil))
	}
}
