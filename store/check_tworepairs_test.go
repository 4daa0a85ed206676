package store

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sessdb/gates"
	"sessdb/internal/faults"
)

// Two check --repair runs at once on a damaged meta.db (an operator's and
// a cron's): the one that looks first and repairs second finds the file
// gone, moved aside by the other. Its line said "not repaired: open
// <key>/meta.db: no such file or directory" under a problem its summary
// counted as not remaining (exit 0), which reads as a repair that failed.
// It says now that the file went since it was found, and the file is
// moved aside once, the transcript kept.
func TestARepairOfAMetaDBAnotherRepairMovedAsideSaysSo(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	key := chkKey(t, s, "tworepairs")
	if err := os.Truncate(chkDB(root, key), 0); err != nil {
		t.Fatal(err)
	}
	transcript, _ := os.ReadFile(filepath.Join(root, key, TranscriptName))
	var other []Finding
	fired := false
	faults.Set(func(p faults.Point) error {
		if p == faults.CheckAfterKeyOpen && !fired {
			// The first run has found meta.db damaged (which holds no
			// lock) and not yet repaired it: the second runs whole.
			fired = true
			other, _ = chkRun(t, s, true)
		}
		return nil
	})
	t.Cleanup(func() { faults.Set(nil) })
	found, sum := chkRun(t, s, true)
	faults.Set(nil)
	if !fired {
		t.Fatal("the hook did not fire")
	}
	if f := chkFind(other, key+"/"+"meta.db", KindMetaDamaged); f == nil || !f.Repaired {
		t.Fatalf("the second run did not move meta.db aside: %+v", other)
	}
	f := chkFind(found, key+"/"+"meta.db", KindMetaDamaged)
	if f == nil {
		t.Fatalf("the first run did not report the damage it found: %+v", found)
	}
	if strings.HasPrefix(f.Repair, "not repaired") || !strings.Contains(f.Repair, "gone since it was found") || f.Remains {
		t.Errorf("the first run's line: repair %q, remains %v; want it gone since it was found, not remaining", f.Repair, f.Remains)
	}
	if sum.Remaining != 0 {
		t.Errorf("remaining %d, want 0", sum.Remaining)
	}
	aside, _ := filepath.Glob(filepath.Join(root, key, AsidePrefix+"*"))
	if len(aside) != 1 {
		t.Errorf("moved aside %d times: %v", len(aside), aside)
	}
	if b, _ := os.ReadFile(filepath.Join(root, key, TranscriptName)); string(b) != string(transcript) {
		t.Error("the transcript changed")
	}
}

// The same for a reaped dir a promotion landed in, which a reap (or
// another check --repair) running at once moved back to its key between
// this run's look and its repair: the line said "not repaired: rename
// .reaped-<key>-… <key>: no such file or directory" (measured with two
// real processes on 300 such dirs: 9 to 16 such lines a run, and 21 to 27
// "not repaired: open .reaped-…: no such file or directory", exit 0).
func TestARepairOfAReapedDirAnotherRunRestoredSaysSo(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	key := chkKey(t, s, "restored")
	reaped := ReapedPrefix + key + "-0123456789abcdef"
	if err := os.Rename(filepath.Join(root, key), filepath.Join(root, reaped)); err != nil {
		t.Fatal(err)
	}
	fired := false
	faults.Set(func(p faults.Point) error {
		if p == faults.DBOpenWriter && !fired {
			// This run's repair begins its open; the other restores the
			// dir first (its rename, under a lock this run then waits for).
			fired = true
			if err := os.Rename(filepath.Join(root, reaped), filepath.Join(root, key)); err != nil {
				t.Error(err)
			}
		}
		return nil
	})
	t.Cleanup(func() { faults.Set(nil) })
	found, sum := chkRun(t, s, true)
	faults.Set(nil)
	if !fired {
		t.Fatal("the hook did not fire")
	}
	f := chkFind(found, reaped, KindReapInterrupted)
	if f == nil {
		t.Fatalf("the reaped dir is not reported: %+v", found)
	}
	if strings.HasPrefix(f.Repair, "not repaired") || !strings.Contains(f.Repair, "gone since it was found") || f.Remains {
		t.Errorf("the line: repair %q, remains %v; want it gone since it was found, not remaining", f.Repair, f.Remains)
	}
	if sum.Remaining != 0 {
		t.Errorf("remaining %d, want 0", sum.Remaining)
	}
	if sess, err := s.Resolve(key, localJob(), t.TempDir()); err != nil || !sess.Resume {
		t.Errorf("the key restored does not resume: %+v, %v", sess, err)
	}
}

// The same for a pending promotion: the run that rolls forward second
// found nothing in flight under its lock, and said "rolled forward: the
// temp was renamed over current.jsonl and the record cleared", a rename
// it never made (counted repaired in both runs' summaries).
func TestARollForwardAnotherRepairMadeFirstSaysSo(t *testing.T) {
	s, _, _ := newTestStore(t, gates.Bounds{})
	key := chkKey(t, s, "pending")
	faults.Set(func(p faults.Point) error {
		if p == faults.PromoteAfterCommit {
			return errors.New("crash between the commit and the rename")
		}
		return nil
	})
	sess, jobDir := mustResolve(t, s, key, localJob())
	stage(t, jobDir, append(staged(t, jobDir), entryLine("acknowledged?")...))
	if _, err := s.Promote(sess, PromoteRequest{PiVersion: testPi}); err == nil {
		t.Fatal("the fault did not stop the promotion")
	}
	fired := false
	var other []Finding
	faults.Set(func(p faults.Point) error {
		if p == faults.DBOpenWriter && !fired {
			// This run's roll-forward begins its open, nothing held: the
			// other runs whole first.
			fired = true
			other, _ = chkRun(t, s, true)
		}
		return nil
	})
	t.Cleanup(func() { faults.Set(nil) })
	found, sum := chkRun(t, s, true)
	faults.Set(nil)
	if !fired {
		t.Fatal("the hook did not fire")
	}
	path := key + "/" + "meta.db"
	if f := chkFind(other, path, KindPendingPromotion); f == nil || !f.Repaired || !strings.HasPrefix(f.Repair, "rolled forward") {
		t.Fatalf("the other run did not roll forward: %+v", other)
	}
	f := chkFind(found, path, KindPendingPromotion)
	if f == nil {
		t.Fatalf("this run did not report the pending promotion it found: %+v", found)
	}
	if f.Repaired || !strings.Contains(f.Repair, "gone since it was found") || f.Remains {
		t.Errorf("this run's line: repair %q, repaired %v, remains %v; want it gone since it was found, not repaired by this run, not remaining", f.Repair, f.Repaired, f.Remains)
	}
	if sum.Remaining != 0 || sum.Repaired != 0 {
		t.Errorf("summary %+v, want nothing repaired by this run and nothing remaining", sum)
	}
	job := t.TempDir()
	sess, err := s.Resolve(key, localJob(), job)
	if err != nil || !sess.Resume || !strings.Contains(string(staged(t, job)), "acknowledged?") {
		t.Errorf("the committed promotion is not what resumes: %+v, %v", sess, err)
	}
}
