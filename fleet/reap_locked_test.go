package fleet

import (
	"testing"
	"time"

	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// A reap judges a key that is not expired from its listing alone, and
// keeps it without taking its lock: only an expired key is taken under
// its lock and judged again (Reap's doc). A fresh key whose lock another
// reap or repair holds is kept, not skipped: skipped, it counted as a
// failure in sessdb reap's summary for a key that nothing was to be done
// to, and every fresh key of the fleet cost a lock on each reap.
func TestReapKeepsAFreshKeyWhoseLockIsHeldWithoutWaitingForIt(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	f := newFixture(t, c, func(cfg *Config) { cfg.LockWait = time.Second }) // the wait for the other holder
	key := store.Key("github", "reap", "fresh-locked")
	f.run(key, "fresh")
	other := f.open()
	unlock, _, err := other.meta.Lock(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	res, err := f.b.Reap(t.Context(), ReapOptions{TTL: 14 * 24 * time.Hour})
	if err != nil || res.Kept != 1 || len(res.Skipped) != 0 || len(res.Removed) != 0 {
		t.Fatalf("reap of a fresh key whose lock is held = %+v, %v; want it kept (Kept 1, nothing skipped or removed)", res, err)
	}
}
