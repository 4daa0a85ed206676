package store

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"sessdb/gates"
	"sessdb/internal/faults"
)

// A dead key judged expired by the reap's first look and found changed
// under its lock is kept, and left as the reap found it there: its empty
// meta.db, where one was there before the reap's open, stays (removed, its
// unlink would set the dir's mtime, the key's clock, once more), and the
// one the reap's own open made for its lock, where the key's went between
// the look and the lock (a promotion that made it for its lock and was
// refused, or a repair, removed it), goes with the refusal.
func TestAReapOfADeadKeyChangedSinceItsLookLeavesItAsItWas(t *testing.T) {
	for _, change := range []string{"meta.db removed", "a temp staged"} {
		t.Run(change, func(t *testing.T) {
			s, root, clock := newTestStore(t, gates.Bounds{TTL: opsTTL})
			idle := clock.now.Add(-opsTTL - time.Hour)
			kd := deadKeyDir(t, root, nil, idle, idle)
			meta := filepath.Join(kd, "meta.db")
			temp := tmpPrefix + "00000000000000ab"
			changed := false
			faults.Set(func(p faults.Point) error {
				if p != faults.ReapBeforeLock || changed {
					return nil
				}
				changed = true
				var err error
				if change == "meta.db removed" {
					err = os.Remove(meta)
				} else {
					// Young by the store's clock: no sweep takes it.
					err = os.WriteFile(filepath.Join(kd, temp), []byte("x"), 0o600)
				}
				if err != nil {
					t.Error(err)
				}
				return nil
			})
			res, err := s.Reap(false)
			faults.Set(nil)
			if !changed {
				t.Fatal("the reap never came to its lock: the first look did not judge the key dead and expired")
			}
			if err != nil || len(res.Removed) != 0 || len(res.Failed) != 0 || res.Kept != 1 {
				t.Fatalf("reap = %+v, %v; want the key kept, changed since the look", res, err)
			}
			ents, err := os.ReadDir(kd)
			if err != nil {
				t.Fatalf("the key dir: %v; want it kept", err)
			}
			var left []string
			for _, e := range ents {
				left = append(left, e.Name())
			}
			var want []string // nothing: the meta.db the reap made for its lock removed
			if change == "a temp staged" {
				want = []string{temp, "meta.db"} // the key's own meta.db kept
			}
			if !slices.Equal(left, want) {
				t.Errorf("the key dir holds %q after the reap; want %q", left, want)
			}
		})
	}
}
