package fleet

import (
	"context"
	"slices"
	"testing"
	"time"

	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// A dry run takes no key's lock (a lease and a key written in etcd): it
// changes nothing (cli.md: "prints what would be done and changes
// nothing"; fleet.md: a dry run writes nothing), as a sessions root's dry
// run takes no key's exclusive lock. So it waits for no reap or `check
// --repair` that holds an expired key's lock, a real reap beside it never
// meets a key locked by it (a cron reap's exit 1), and it lists what it
// would remove under etcd's NOSPACE alarm, when every write is refused.
// Before, it took each expired key's lock as a real reap does: it waited
// LockWait for the holder and then failed the key, failed it under
// NOSPACE, and a real reap beside it failed the key as locked.
func TestADryRunReapTakesNoLock(t *testing.T) {
	etcdtest.Beside(t)
	f := newFixture(t, etcdtest.Start1(t), func(cfg *Config) { cfg.LockWait = time.Second })
	expired := store.Key("github", "dry", "expired")
	f.now = time.Now().Add(-30 * 24 * time.Hour)
	f.run(expired, "old")
	f.now = time.Time{}
	ttl := 14 * 24 * time.Hour
	cli := f.c.Client(t)
	revision := func() int64 {
		t.Helper()
		resp, err := cli.Get(context.Background(), f.prefix+"/record/"+expired)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Header.Revision
	}
	dry := func(what string) {
		t.Helper()
		before, start := revision(), time.Now()
		res, err := f.b.Reap(t.Context(), ReapOptions{TTL: ttl, DryRun: true})
		took := time.Since(start)
		if err != nil || !slices.Equal(res.Removed, []string{expired}) || len(res.Skipped) != 0 {
			t.Errorf("%s: dry run = %+v, %v; want %s listed to remove, nothing failed", what, res, err, expired)
		}
		if after := revision(); after != before {
			t.Errorf("%s: the dry run wrote to etcd: its revision went from %d to %d", what, before, after)
		}
		if took >= time.Second {
			t.Errorf("%s: the dry run took %v: it waited for the key's lock (LockWait 1s)", what, took)
		}
	}
	dry("alone")

	other := f.open(func(cfg *Config) { cfg.LockWait = time.Second })
	unlock, _, err := other.meta.Lock(t.Context(), expired)
	if err != nil {
		t.Fatal(err)
	}
	dry("beside a reap that holds the key's lock")
	unlock()

	f.nospace(true)
	dry("under the NOSPACE alarm")
	f.nospace(false)

	// A real reap that reaches the key while the dry run judges it.
	var beside *ReapResult
	f.b.held = func(key string, _ <-chan struct{}) {
		r, _ := other.Reap(t.Context(), ReapOptions{TTL: ttl})
		beside = &r
	}
	dry("a real reap beside it")
	f.b.held = nil
	if beside != nil && len(beside.Skipped) > 0 {
		t.Errorf("a real reap run while the dry run judged the key = %+v; it failed the key, locked by the dry run", *beside)
	}
	if res, err := f.b.Reap(t.Context(), ReapOptions{TTL: ttl}); err != nil || !slices.Equal(res.Removed, []string{expired}) {
		t.Fatalf("the real reap = %+v, %v; want %s removed", res, err, expired)
	}
}
