package fleet

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"sessdb/fleet/shared"
	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// A walk that stops on an error of its own while the caller's ctx ends
// returns that error, not ctx's: ctx's error stands for the walk's only
// where the walk's error is of ctx's end (callersEnd). Here the
// transcripts dir goes away under a reap's sweep as the caller cancels:
// the reap stops on the dir, and says so (an operator told "canceled"
// would not look at the mount). Before (mutant f09 of the fleet sweep's
// list, stopped() without `errors.Is(err, cerr)`), no test ended the
// caller's ctx beside another error: the mutant returned
// context.Canceled.
func TestAWalkStoppedByItsOwnErrorAsTheCallerCancelsReturnsItsOwn(t *testing.T) {
	etcdtest.Beside(t)
	f := newFixture(t, etcdtest.Start1(t))
	key := store.Key("github", "callers-end", "x")
	f.run(key, "one")
	f.run(key, "two")
	away := f.dir + ".away"
	t.Cleanup(func() { os.Rename(away, f.dir) })
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	f.b.hook = func(p, _ string) error {
		if p == hookSweep {
			os.Rename(f.dir, away)
			cancel()
		}
		return nil
	}
	res, err := f.b.Reap(ctx, ReapOptions{Now: func() time.Time { return time.Now().Add(2 * time.Hour) }})
	if !errors.Is(err, shared.ErrDirUnavailable) || errors.Is(err, context.Canceled) || len(res.Swept) != 0 {
		t.Fatalf("reap whose dir went away as its caller cancelled = %+v, %v; want the dir unavailable, nothing swept", res, err)
	}
}
