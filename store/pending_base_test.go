package store

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"sessdb/db"

	"sessdb/gates"
	"sessdb/internal/faults"
)

// A resolve of a key a crash left with a committed promotion's temp reads
// the temp once more for the ticket's base (is it whole, or does the key
// hold the generation before it?), which a cold start's ticket carries.
// That read failing (an I/O error) says nothing of the temp: the resolve
// is a fault. It was taken for a damaged temp: the cold start's ticket
// named the generation before it, and the job's promote, after its
// roll-forward put the whole temp in place, was superseded by that
// generation instead of promoted onto it.
func TestPendingTempNotReadForTheBaseIsAFault(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "before")
	sess, jobDir := mustResolve(t, s, testKey, localJob())
	stage(t, jobDir, append(staged(t, jobDir), entryLine("committed")...))
	crashAfterCommit(t, s, root, sess)
	other := localJob()
	other.Venue = "elsewhere" // a closed rung: a cold start onto the key's base
	eio := errors.New("input/output error")
	faults.Set(func(p faults.Point) error {
		if p == faults.PendingTempCheck {
			return eio
		}
		return nil
	})
	t.Cleanup(func() { faults.Set(nil) })
	got, err := s.Resolve(testKey, other, t.TempDir())
	if !errors.Is(err, eio) {
		t.Fatalf("resolve with the pending temp's check failing = {resume %v, %s, base gen %d}, %v; want the read's error", got.Resume, got.Reason, got.Base.Gen, err)
	}
	faults.Set(nil)
	got, _ = mustResolve(t, s, testKey, other)
	if got.Resume || got.Base.Gen != 2 {
		t.Fatalf("resolve = {resume %v, %s, base gen %d}; want a cold start onto the committed gen 2", got.Resume, got.Reason, got.Base.Gen)
	}
}

// check's pending-promotion finding reads the temp to say whether it is
// whole (a roll-forward renames it) or not (it removes it and leaves the
// record pending).
// That read failing says nothing of the temp: check reports it
// unreadable. It said "missing or not what the record says", and --repair,
// whose roll-forward then found the temp whole and renamed it into place,
// reported that it "removed its temp, which did not match its record".
func TestCheckOfAPendingTempNotReadIsUnreadable(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "before")
	sess, jobDir := mustResolve(t, s, testKey, localJob())
	stage(t, jobDir, append(staged(t, jobDir), entryLine("committed")...))
	tmp := crashAfterCommit(t, s, root, sess)
	eio := errors.New("input/output error")
	faults.Set(func(p faults.Point) error {
		if p == faults.PendingTempCheck {
			return eio
		}
		return nil
	})
	t.Cleanup(func() { faults.Set(nil) })
	var found []Finding
	if _, err := s.Check(context.Background(), CheckOptions{}, func(f Finding) error {
		found = append(found, f)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	p := chkFind(found, testKey+"/"+db.FileName, KindPendingPromotion)
	u := chkFind(found, testKey+"/"+filepath.Base(tmp), KindUnreadable)
	if u == nil || p != nil && strings.Contains(p.Detail, "not what the record says") {
		t.Fatalf("check with the pending temp's read failing: %+v; want the temp unreadable, not judged", found)
	}
}

// A promotion that landed keeps its pending entry until the next writer's
// commit; check tells it settled by its temp gone from its name. That look
// (an lstat) failing otherwise than "gone" (an I/O error, the kernel out
// of memory) says nothing of the promotion: check reports the temp
// unreadable (exit 1, what it could not read), not a pending promotion.
// It counted as in flight: a settled promotion was reported as a problem,
// its temp "missing or not what the record says" (exit 3).
func TestCheckOfAPendingTempNotLookedAtIsUnreadable(t *testing.T) {
	s, _, _ := newTestStore(t, gates.Bounds{})
	_, res := runJob(t, s, testKey, localJob(), PromoteRequest{}, "settled")
	if found, _ := chkRun(t, s, false); len(found) != 0 {
		t.Fatalf("check of a settled promotion: %+v; want nothing to say", found)
	}
	var tmp string
	withDB(t, s.Root(), testKey, func(tx *db.Tx) error {
		sc, err := tx.Sidecars()
		if sc.Pending == nil {
			t.Fatalf("gen %d landed with no pending entry kept (%v): nothing to look at", res.Gen, err)
		}
		tmp = sc.Pending.Tmp
		return err
	})
	eio := errors.New("input/output error")
	faults.Set(func(p faults.Point) error {
		if p == faults.PendingLook {
			return eio
		}
		return nil
	})
	t.Cleanup(func() { faults.Set(nil) })
	found, _ := chkRun(t, s, false)
	u := chkFind(found, testKey+"/"+tmp, KindUnreadable)
	if u == nil || chkFind(found, testKey+"/"+db.FileName, KindPendingPromotion) != nil || len(found) != 1 {
		t.Fatalf("check with the settled promotion's temp not looked at: %+v; want the temp unreadable alone", found)
	}
	// dump says it could not tell, rather than list a pending promotion.
	var r KeyReport
	if err := s.InspectWith(context.Background(), InspectOptions{Only: testKey}, func(k KeyReport) error { r = k; return nil }); err != nil {
		t.Fatal(err)
	}
	if r.Pending != nil || !strings.Contains(r.Problem, eio.Error()) {
		t.Fatalf("dump with the settled promotion's temp not looked at: pending %+v, problem %q; want no pending, the look's error", r.Pending, r.Problem)
	}
}

// A writer (promote) settles the key's pending promotion first. A look at
// a landed promotion's temp that fails counts as in flight there: the
// roll-forward's open of the temp tells it gone (settled), so the promote
// goes on onto the generation in place, as without the failure. A temp
// not read is the writer's error (TestRollForwardThatCannotReadTheTempRemovesNothing). This
// pins the rule check's fix (pendingLook) left to writers and readers.
func TestPromoteOverAPendingTempNotLookedAtOpensIt(t *testing.T) {
	s, _, _ := newTestStore(t, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "settled")
	sess, jobDir := mustResolve(t, s, testKey, localJob())
	stage(t, jobDir, append(staged(t, jobDir), entryLine("next")...))
	looks := 0
	faults.Set(func(p faults.Point) error {
		if p == faults.PendingLook {
			looks++
			return errors.New("input/output error")
		}
		return nil
	})
	t.Cleanup(func() { faults.Set(nil) })
	if res, err := s.Promote(sess, PromoteRequest{}); err != nil || !res.Promoted || res.Gen != 2 || looks == 0 {
		t.Fatalf("promote with the landed promotion's temp not looked at (%d looks) = %+v, %v; want gen 2 promoted", looks, res, err)
	}
}

// A committed promotion whose temp is whole is what the key holds, even
// where the temp is the size of the generation before it (a rewrite that
// kept the length): the base of a resolve that cold-starts the key is the
// committed generation, so that the job's promote, after the roll-forward
// puts the temp in place, replaces it and is not superseded. Judged by
// size, what is in place (the generation before) looks like a lost
// promotion's fallback.
func TestAWholePendingTempTheSizeOfTheGenerationBeforeIsTheBase(t *testing.T) {
	s, _, _ := newTestStore(t, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "before")
	sess, jobDir := mustResolve(t, s, testKey, localJob())
	stage(t, jobDir, bytes.Replace(staged(t, jobDir), []byte(`"before"`), []byte(`"BEFORE"`), 1))
	faults.Set(func(p faults.Point) error {
		if p == faults.PromoteAfterCommit {
			return errors.New("crash")
		}
		return nil
	})
	res, _ := s.Promote(sess, PromoteRequest{PiVersion: testPi, AllowRewrite: true})
	faults.Set(nil)
	if res.Promoted {
		t.Fatal("the promotion landed; want it committed, not renamed")
	}
	elsewhere := localJob()
	elsewhere.Venue = "elsewhere"
	cold, jobDir := mustResolve(t, s, testKey, elsewhere)
	if cold.Resume || cold.Reason != gates.VenueChanged || cold.Base.Gen != 2 {
		t.Fatalf("resolve from another venue: %s, base gen %d; want venue-changed onto gen 2, the committed rewrite", cold.Reason, cold.Base.Gen)
	}
	stage(t, jobDir, transcriptBytes(testClockStart, "cold run"))
	if res := mustPromote(t, s, cold, PromoteRequest{PiVersion: testPi}); !res.Promoted || res.Gen != 3 {
		t.Errorf("the cold job's promote: %+v; want promoted at gen 3", res)
	}
}
