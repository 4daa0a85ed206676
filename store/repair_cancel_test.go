package store

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"sessdb/gates"
	"sessdb/internal/faults"
)

// A committed promotion's temp (a crash between the commit and its
// rename), 12 MiB, for a roll-forward to read whole before it renames it.
func committedTemp(t *testing.T) (*Store, string, string) {
	t.Helper()
	s, root, _ := newTestStore(t, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "first")
	sess, jobDir := mustResolve(t, s, testKey, localJob())
	big := strings.Repeat("x", 4<<20)
	stage(t, jobDir, append(staged(t, jobDir), entryLine(big)+entryLine(big)+entryLine(big)+entryLine("committed")...))
	return s, root, crashAfterCommit(t, s, root, sess)
}

// cancelAtRollForwardRead has cancel called as a roll-forward's read of
// its temp starts, and counts those reads.
func cancelAtRollForwardRead(t *testing.T, cancel func()) *int {
	reads := 0
	faults.Set(func(p faults.Point) error {
		if p == faults.RollForwardTempRead {
			reads++
			cancel()
		}
		return nil
	})
	t.Cleanup(func() { faults.Set(nil) })
	return &reads
}

// check --repair rolls a committed promotion forward: it reads the temp
// whole, then renames it. That read took context.Background(): a check
// --repair interrupted (Ctrl-C, a Go caller's cancel) as it began read on
// to the temp's end and renamed it, reporting the key repaired, and
// ended as if never interrupted. It takes the walk's ctx now: the read
// stops, nothing is renamed or swept, the finding is not repaired, and the
// check ends with the interrupt; the next look still serves the committed
// promotion.
func TestACheckRepairInterruptedWhileItRollsForwardIsTheInterrupt(t *testing.T) {
	s, root, temp := committedTemp(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	reads := cancelAtRollForwardRead(t, cancel)
	var found []Finding
	_, err := s.Check(ctx, CheckOptions{Repair: true}, func(f Finding) error { found = append(found, f); return nil })
	faults.Set(nil)
	if *reads != 1 || !errors.Is(err, context.Canceled) {
		t.Fatalf("check --repair interrupted as its roll-forward read the temp (%d reads): %v; want context.Canceled", *reads, err)
	}
	for _, f := range found {
		if f.Kind == KindPendingPromotion && f.Repaired {
			t.Errorf("the roll-forward the interrupt stopped: %+v; want it not repaired", f)
		}
	}
	if after, _ := filepath.Glob(filepath.Join(root, testKey, tmpPrefix+"*")); len(after) != 1 || after[0] != temp {
		t.Fatalf("temps after the interrupted repair: %v; want %s left as it was", after, temp)
	}
	got, data := checkDescribed(t, s, root, testKey)
	if !got.Resume || got.Gen() != 2 || markerOf(data, 1) != "committed" {
		t.Fatalf("after the interrupt: %+v holding %q; want the committed promotion (gen 2)", got, markerOf(data, 1))
	}
}

// check --repair --accept KEY (accept) rolls a promotion in flight forward
// before it records the transcript, and that read took
// context.Background() as well: interrupted as it began, it renamed the
// temp and recorded the key. It takes the check's ctx now: the accept
// fails with the interrupt, nothing renamed or written.
func TestAnAcceptInterruptedWhileItRollsForwardWritesNothing(t *testing.T) {
	s, root, temp := committedTemp(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	reads := cancelAtRollForwardRead(t, cancel)
	f := s.acceptFinding(ctx, testKey, nil)
	faults.Set(nil)
	if *reads != 1 || f.Repaired || !strings.Contains(f.Repair, context.Canceled.Error()) {
		t.Fatalf("accept interrupted as its roll-forward read the temp (%d reads): %+v; want not repaired, the interrupt", *reads, f)
	}
	if after, _ := filepath.Glob(filepath.Join(root, testKey, tmpPrefix+"*")); len(after) != 1 || after[0] != temp {
		t.Fatalf("temps after the interrupted accept: %v; want %s left as it was", after, temp)
	}
	got, data := checkDescribed(t, s, root, testKey)
	if !got.Resume || got.Gen() != 2 || markerOf(data, 1) != "committed" {
		t.Fatalf("after the interrupt: %+v holding %q; want the committed promotion (gen 2)", got, markerOf(data, 1))
	}
}

// check --repair --accept KEY interrupted as its roll-forward reads the
// temp: the repair's roll-forward stops, and so must the accept's after
// it (checkEntry hands acceptFinding the check's ctx), nothing renamed.
func TestACheckRepairAcceptInterruptedWhileItRollsForwardRenamesNothing(t *testing.T) {
	s, root, temp := committedTemp(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	reads := cancelAtRollForwardRead(t, cancel)
	_, err := s.Check(ctx, CheckOptions{Repair: true, Accept: testKey}, func(Finding) error { return nil })
	faults.Set(nil)
	if *reads == 0 || !errors.Is(err, context.Canceled) {
		t.Fatalf("check --repair --accept interrupted as its roll-forward read the temp (%d reads): %v; want context.Canceled", *reads, err)
	}
	if after, _ := filepath.Glob(filepath.Join(root, testKey, tmpPrefix+"*")); len(after) != 1 || after[0] != temp {
		t.Fatalf("temps after the interrupted check --repair --accept (%d reads): %v; want %s left as it was", *reads, after, temp)
	}
}
