package store

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"sessdb/gates"
	"sessdb/internal/faults"
	"sessdb/internal/fsat"
)

// check --repair looks at a key, then removes the stray temps it saw under
// the key's lock: not the look's lock, so a promotion may commit between
// the two and be killed before its rename. Its temp is then the only copy
// of a generation meta.db names; the repair leaves it, with why, and the
// next resolve resumes that generation (with the temp swept, the key
// holds a record that describes no file: the committed run is lost).
func TestRepairKeepsATempCommittedAfterItsLook(t *testing.T) {
	s, root, clock := newTestStore(t, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "one")
	debris := filepath.Join(root, testKey, ".meta.db.tmp-0123456789abcdef")
	chkOldFile(t, debris, clock.now.Add(-2*time.Hour))
	rootF, err := fsat.OpenDir(root)
	if err != nil {
		t.Fatal(err)
	}
	defer rootF.Close()
	found, err := s.examine(context.Background(), rootF, testKey, nil)
	if err != nil || !slices.ContainsFunc(found, func(f Finding) bool { return f.Kind == KindStrayTemp }) {
		t.Fatalf("examine: %v, %+v; want the debris found as a stray temp", err, found)
	}
	// Between the look and the repair, a promotion commits gen 2 and is
	// killed before its rename.
	sess, jobDir := mustResolve(t, s, testKey, localJob())
	stage(t, jobDir, append(staged(t, jobDir), entryLine("two")...))
	temp := crashAfterCommit(t, s, root, sess)
	s.repair(context.Background(), rootF, testKey, found)
	if _, err := os.Lstat(debris); !os.IsNotExist(err) {
		t.Errorf("the debris the look found: %v; want it removed", err)
	}
	if _, err := os.Lstat(temp); err != nil {
		t.Errorf("the committed promotion's temp after the repair: %v; want it kept, it is gen 2's only copy", err)
	}
	sess, jobDir = mustResolve(t, s, testKey, localJob())
	want(t, sess, true, gates.Resumed)
	if sess.Gen() != 2 || !bytes.Contains(staged(t, jobDir), []byte("two")) {
		t.Fatalf("resumed gen %d; want gen 2, the committed promotion", sess.Gen())
	}
}

// reap sweeps the stale temps of a key it keeps; where the key has no
// meta.db when it looks (a legacy key), there is no lock to take, and the
// age of a temp is the guard. A first promotion of that key may make its
// meta.db, stage its temp and commit between the look and the removal;
// written while the host's clock read more than StaleTempAge behind the
// reap's (a clock set back between two steps), its temp looks stale.
// reap leaves it: it is the only copy of the generation meta.db now
// names, and the key resumes it.
func TestReapLeavesATempAFirstPromotionCommittedAfterItsLook(t *testing.T) {
	s, root, clock := newTestStore(t, gates.Bounds{})
	writeLegacy(t, root, testKey, map[string]string{TranscriptName: string(transcriptBytes(clock.now, "legacy"))})
	debris := filepath.Join(root, testKey, ".meta.db.tmp-0123456789abcdef")
	chkOldFile(t, debris, clock.now.Add(-2*time.Hour))
	sess, jobDir := mustResolve(t, s, testKey, localJob())
	stage(t, jobDir, transcriptBytes(clock.now, "legacy", "promoted"))
	var temp string
	faults.Set(func(p faults.Point) error {
		if p == faults.SweepUnlockedBeforeList && temp == "" {
			temp = crashAfterCommit(t, s, root, sess)
			old := clock.now.Add(-2 * time.Hour)
			if err := os.Chtimes(temp, old, old); err != nil {
				t.Fatal(err)
			}
		}
		return nil
	})
	t.Cleanup(func() { faults.Set(nil) })
	res, err := s.Reap(false)
	if err != nil || temp == "" {
		t.Fatalf("reap = %+v, %v (a promotion ran in its window: %v)", res, err, temp != "")
	}
	if _, err := os.Lstat(temp); err != nil {
		t.Errorf("the committed promotion's temp after the reap (swept %v): %v; want it kept, it is the committed generation's only copy", res.Swept, err)
	}
	sess, jobDir = mustResolve(t, s, testKey, localJob())
	if !sess.Resume || !bytes.Contains(staged(t, jobDir), []byte("promoted")) {
		t.Fatalf("resolve = {resume %v, %s, gen %d}; want the committed promotion resumed", sess.Resume, sess.Reason, sess.Gen())
	}
	// The next reap has the key's lock to sweep under: the debris goes,
	// the committed temp stays.
	if res, err := s.Reap(false); err != nil || len(res.Swept) != 1 || !strings.HasSuffix(res.Swept[0], filepath.Base(debris)) {
		t.Fatalf("the next reap = %+v, %v; want the debris alone swept", res, err)
	}
	if _, err := os.Lstat(temp); err != nil {
		t.Fatalf("the committed promotion's temp after the next reap: %v", err)
	}
}

// A reap killed after it committed its reaping entry and before its
// rename leaves the key whole, that entry last in its history. A
// promotion that lands in a dir a killed reap renamed is moved back to
// its key by the next reap; a quarantine dir is moved back by nothing.
// So a promotion that waited for the key's lock while check --quarantine
// moved the dir aside fails, whatever the history's last entry says, and
// the quarantine dir stays as the quarantine left it. (Before: the
// promotion saw the reaping entry, landed in the quarantine dir and
// reported promoted; the key resolved absent, and reap leaves a
// quarantine dir: an acknowledged promotion out of every resolve's reach.)
func TestAPromotionWaitingOnAQuarantineAfterAKilledReapFails(t *testing.T) {
	s, root, clock := newTestStore(t, gates.Bounds{TTL: opsTTL})
	expiredKey(t, s, clock, testKey)
	faults.Set(func(p faults.Point) error {
		if p == faults.ReapBeforeRename {
			return errors.New("killed between its reaping entry and its rename")
		}
		return nil
	})
	t.Cleanup(func() { faults.Set(nil) })
	if res, _ := s.Reap(false); len(res.Removed) != 0 || len(res.Failed) != 1 {
		t.Fatalf("the killed reap = %+v; want the key failed, left whole", res)
	}
	sess, jobDir := mustResolve(t, s, testKey, localJob())
	stage(t, jobDir, transcriptBytes(clock.now, "the run"))
	var once atomic.Bool
	var aside, moved string
	faults.Set(func(p faults.Point) error {
		// The promotion has opened the key dir and sets out to take its
		// lock: a quarantine takes it first and moves the dir aside.
		if p == faults.DBOpenWriter && once.CompareAndSwap(false, true) {
			var err error
			if aside, err = s.Quarantine(testKey); err != nil {
				t.Errorf("quarantine: %v", err)
			} else {
				moved = entriesOf(t, filepath.Join(root, aside))
			}
		}
		return nil
	})
	res, err := s.Promote(sess, PromoteRequest{PiVersion: testPi})
	faults.Set(nil)
	if aside == "" {
		t.Fatal("no quarantine ran while the promotion waited")
	}
	if after := entriesOf(t, filepath.Join(root, aside)); after != moved {
		t.Errorf("the quarantine dir changed after the quarantine:\n%s\nwas\n%s", after, moved)
	}
	if res.Promoted {
		again, _ := mustResolve(t, s, testKey, localJob())
		t.Fatalf("promote = %+v, %v, and the key then resolves {resume %v, %s}; want promote-failed, the dir it waited for moved aside", res, err, again.Resume, again.Reason)
	}
	if err == nil || res.Reason != gates.PromoteFailed {
		t.Fatalf("promote = %+v, %v; want promote-failed", res, err)
	}
	if !bytes.Equal(staged(t, jobDir), transcriptBytes(clock.now, "the run")) {
		t.Fatal("the staged transcript changed")
	}
}
