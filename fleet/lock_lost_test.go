package fleet

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// endLockAndWait ends the lease of key's lock (endLock) and waits until
// the holder's session has learned so, on lost, the channel its lock
// gave (Backend.held): a holder learns it at its next keep-alive, which
// is no step of its own a hook could stop at. It reports whether the
// holder learned it within a minute (a hang guard, not a bound: with a
// lease of 1 s a keep-alive goes out every third of a second).
func endLockAndWait(t *testing.T, f *fixture, key string, lost <-chan struct{}) bool {
	endLock(t, f, key)
	select {
	case <-lost:
		return true
	case <-time.After(time.Minute):
		return false
	}
}

// check --repair whose lock of a key ended (its lease expired, and its
// session told so) after the key's record was read again under it, before
// its orphans were removed, removes none of them and says of each that
// the lock ended: another reap or repair may hold the key by then, and
// judge it from a record read since. Before (mutant r11 of the sweep
// `survivors`, the lost lock's `continue` dropped), no test held it: the
// repair went on removing orphans under a lock it no longer had.
func TestARepairWhoseLockEndedRemovesNoOrphan(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	f := newFixture(t, c, func(cfg *Config) { cfg.LockTTL = time.Second })
	key := store.Key("github", "repair-lost", "lease")
	f.runExpired(key, "old") // promoted 30 days ago: its old files are past the grace period
	orphan := f.oldOrphan(key)
	var lost <-chan struct{}
	learned, reached := false, false
	f.b.held = func(k string, l <-chan struct{}) {
		if k == key {
			lost = l
		}
	}
	f.b.hook = func(point, k string) error {
		if point != hookRepairLocked || k != key || reached {
			return nil
		}
		reached = true
		learned = endLockAndWait(t, f, key, lost)
		return nil
	}
	found := f.repairAll(f.b)
	if !reached || !learned {
		t.Fatalf("the repair reached its hook: %v; learned its lease ended: %v", reached, learned)
	}
	want := "not removed: the key's lock ended (its lease expired) before the repair was done; run check again"
	if len(found) != 1 || found[0].Kind != KindOrphan || found[0].Repair != want || found[0].Repaired || !found[0].Remains {
		t.Errorf("check --repair whose lock ended before its removals: %+v; want the orphan alone, Repair %q, remaining", found, want)
	}
	if _, err := os.Stat(orphan); err != nil {
		t.Errorf("the orphan: %v; want it left", err)
	}
}

// A reap whose lock of an expired key ended (its lease expired, and its
// session told so) after the key was judged expired under it, before its
// delete, leaves the key as it is and reports it skipped with
// ErrLockLost, not removed: another reaper may hold the key by then
// (ErrLockLost's doc). Before (mutant p28, the lost lock's return
// dropped), no test held it: the reap went on and removed the key under
// a lock it no longer had, its delete's guard unmoved.
func TestAReapWhoseLockEndedLeavesTheKey(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	f := newFixture(t, c, func(cfg *Config) { cfg.LockTTL = time.Second })
	key := store.Key("github", "reap-lost", "lease")
	f.runExpired(key, "old")
	file := f.recordFile(key)
	var lost <-chan struct{}
	learned, reached := false, false
	f.b.held = func(k string, l <-chan struct{}) {
		if k == key {
			lost = l
		}
	}
	f.b.hook = func(point, k string) error {
		if point != hookReapDelete || k != key || reached {
			return nil
		}
		reached = true
		learned = endLockAndWait(t, f, key, lost)
		return nil
	}
	res, err := f.b.Reap(t.Context(), ReapOptions{TTL: 14 * 24 * time.Hour})
	if !reached || !learned {
		t.Fatalf("the reap reached its hook: %v; learned its lease ended: %v (%+v, %v)", reached, learned, res, err)
	}
	if err != nil || slices.Contains(res.Removed, key) || !errors.Is(res.Skipped[key], ErrLockLost) || res.Kept != 0 {
		t.Errorf("reap whose lock ended before its delete = %+v, %v; want the key skipped, its lock lost", res, err)
	}
	if f.recordFile(key) != file {
		t.Errorf("the key's record names %q; want it kept, naming %q", f.recordFile(key), file)
	}
	if _, err := os.Stat(filepath.Join(f.dir, file)); err != nil {
		t.Errorf("the key's file: %v; want it kept", err)
	}
}
