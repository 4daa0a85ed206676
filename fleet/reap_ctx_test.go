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
	etcdtest.Beside(t)
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

// Ctrl-C during reap's walk of the keys judges no key after it, fresh
// ones included: judging one may read its file's mtime (an lstat on the
// file server, thousands of them on a large fleet), and cli.md promises
// a stop within a second. Before, the walk went on judging every key
// left and stopped only at the sweep, its Kept counting keys judged after
// the stop.
func TestReapKeyWalkStopsWhenCtxEnds(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	for _, k := range []string{"a", "b", "c"} {
		f.run(store.Key("github", "reap", k), "one")
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	judged := 0
	r, err := f.b.Reap(ctx, ReapOptions{TTL: time.Hour, Now: func() time.Time {
		judged++
		cancel() // Ctrl-C as the first key is judged
		return time.Now()
	}})
	if !errors.Is(err, context.Canceled) || r.Kept != 1 || judged != 1 {
		t.Fatalf("reap = %+v, %v, %d keys judged; want context.Canceled after the first key", r, err, judged)
	}
}
