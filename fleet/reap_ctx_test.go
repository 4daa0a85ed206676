package fleet

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// Ctrl-C (the end of ctx) under reap's sweep of orphans removes nothing
// more: the removal under way finishes, reap returns ctx's error with what
// it swept, and the orphans left are the next reap's, as a sessions
// root's reap stops between keys. Before, the sweep went on to the last
// orphan and reported a complete run.
func TestReapSweepStopsWhenCtxEnds(t *testing.T) {
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	key := store.Key("github", "reap", "swept")
	for _, m := range []string{"a", "b", "c", "d"} {
		f.run(key, m)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	calls := 0
	f.b.hook = func(p, k string) error {
		if p == hookSweep {
			calls++
			cancel()
		}
		return nil
	}
	later := func() time.Time { return time.Now().Add(2 * time.Hour) }
	r, err := f.b.Reap(ctx, ReapOptions{Now: later})
	if !errors.Is(err, context.Canceled) || len(r.Swept) != 1 || calls != 1 {
		t.Fatalf("reap = %+v, %v, %d removals begun; want context.Canceled after the one removal under way", r, err, calls)
	}
	f.holds(key, "d", 4)
	f.b.hook = nil
	r, err = f.b.Reap(t.Context(), ReapOptions{Now: later})
	if err != nil || len(r.Swept) != 2 || slices.Contains(r.Swept, f.recordFile(key)) {
		t.Fatalf("the next reap = %+v, %v; want the two orphans left swept", r, err)
	}
}
