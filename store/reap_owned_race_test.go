package store

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"sessdb/db"
	"sessdb/gates"
	"sessdb/internal/faults"
)

// TestAReapNeverMakesAMetaDBInAReapOwnedDir: a reap-owned dir found under
// the root may be a live reap's, which unlinks the dir's meta.db last and
// then removes the dir. A second reap (or a check --repair) that looked
// at that meta.db and then opened it after the unlink made a fresh one
// there (a writer's open makes a missing meta.db): the live reap's rmdir
// then failed (ENOTEMPTY), so it reported the key it had removed as
// failed ("the key is gone ..., but its removal stopped", exit 1), and the
// second reported finishing an interrupted reap that was not. (TestChaos
// found it: a reap failing that way in about one 15 s run of four.) The
// meta.db gone under the look is now that reap's removal under way: the
// second skips the dir, makes nothing in it, and reports no failure.
func TestAReapNeverMakesAMetaDBInAReapOwnedDir(t *testing.T) {
	s, root, clock := newTestStore(t, gates.Bounds{TTL: opsTTL})
	expiredKey(t, s, clock, testKey)
	// A reap-owned dir with its meta.db, as a reap leaves it between its
	// rename and its removal.
	faults.Set(func(p faults.Point) error {
		if p == faults.ReapAfterRename {
			return errors.New("stopped after its rename")
		}
		return nil
	})
	t.Cleanup(func() { faults.Set(nil) })
	s.Reap(false)
	owned := ""
	ents, _ := os.ReadDir(root)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ReapedPrefix) {
			owned = e.Name()
		}
	}
	if owned == "" {
		t.Fatalf("no reap-owned dir under the root: %v", ents)
	}
	var unlinked, made atomic.Bool
	faults.Set(func(p faults.Point) error {
		switch {
		// The second reap has looked at the dir's meta.db and sets out
		// to open it: the live reap unlinks it, its last entry.
		case p == faults.DBOpenWriter && unlinked.CompareAndSwap(false, true):
			if err := os.Remove(filepath.Join(root, owned, db.FileName)); err != nil {
				t.Errorf("the live reap's unlink: %v", err)
			}
		// The open has a file at the name: one it made.
		case p == faults.DBOpenBeforeLock && unlinked.Load():
			if _, err := os.Lstat(filepath.Join(root, owned, db.FileName)); err == nil {
				made.Store(true)
			}
		}
		return nil
	})
	res, err := s.Reap(false)
	faults.Set(nil)
	if !unlinked.Load() {
		t.Fatal("the second reap never opened the reap-owned dir's meta.db")
	}
	if made.Load() {
		t.Errorf("the second reap made a meta.db in %s, the dir a live reap is removing (its rmdir then fails)", owned)
	}
	if err != nil || len(res.Failed)+len(res.Finished)+len(res.Restored) != 0 {
		t.Errorf("second reap = %+v, %v; want %s skipped: its own reap is removing it", res, err, owned)
	}
}

// TestAReapWhoseKeyWasMovedAndMadeAgainIsNoFailure: a reap that waited
// for a key's lock while another reap or a quarantine moved the dir aside
// skips it (the key it judged is gone, as one removed under it is); where
// a promotion made the key again meanwhile, it counted the dir "failed"
// ("another directory is at its name"), and sessdb reap exited 1, though
// nothing failed and the new key is the next reap's to judge. (TestChaos
// found it: about a dozen in each 15 s run.)
func TestAReapWhoseKeyWasMovedAndMadeAgainIsNoFailure(t *testing.T) {
	s, root, clock := newTestStore(t, gates.Bounds{TTL: opsTTL})
	expiredKey(t, s, clock, testKey)
	var once atomic.Bool
	faults.Set(func(p faults.Point) error {
		if p == faults.ReapBeforeLock && once.CompareAndSwap(false, true) {
			if _, err := s.Quarantine(testKey); err != nil {
				t.Errorf("quarantine: %v", err)
			}
			runJob(t, s, testKey, localJob(), PromoteRequest{}, "the key made again")
		}
		return nil
	})
	t.Cleanup(func() { faults.Set(nil) })
	res, err := s.Reap(false)
	faults.Set(nil)
	if !once.Load() {
		t.Fatal("the reap never set out to lock the key")
	}
	if err != nil || len(res.Failed)+len(res.Removed) != 0 || res.Skipped[testKey] == "" {
		t.Errorf("reap = %+v, %v; want %s skipped, nothing failed or removed", res, err, testKey)
	}
	if sess, _ := mustResolve(t, s, testKey, localJob()); !sess.Resume {
		t.Errorf("the key made again resolves %s", sess.Reason)
	}
	if _, err := os.Lstat(filepath.Join(root, testKey, TranscriptName)); err != nil {
		t.Error(err)
	}
}
