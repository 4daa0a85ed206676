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

// A writer's Begin reads a committed promotion's temp whole (it may be
// gigabytes) before it renames it into place. That read took
// context.Background(): a PromoteContext cancelled while it ran read on
// to the temp's end and rolled the promotion forward, and only then
// returned the cancel (12 MiB here; a 256 MiB temp in the page cache held
// the cancel 46 to 69 ms, 0.07 to 0.25 ms since). The read now takes the
// caller's ctx, and a read the cancel stopped is its error: the promote
// is promote-failed with context.Canceled, the temp neither renamed nor
// swept, and the next look serves the committed promotion.
func TestAPromoteCancelledWhileItsBeginReadsACommittedTempIsTheCancel(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "first")
	sess, jobDir := mustResolve(t, s, testKey, localJob())
	big := strings.Repeat("x", 4<<20)
	stage(t, jobDir, append(staged(t, jobDir), entryLine(big)+entryLine(big)+entryLine(big)+entryLine("committed")...))
	temp := crashAfterCommit(t, s, root, sess)

	next, nextDir := mustResolve(t, s, testKey, localJob())
	stage(t, nextDir, append(staged(t, nextDir), entryLine("next")...))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	reads := 0
	faults.Set(func(p faults.Point) error {
		if p == faults.RollForwardTempRead {
			reads++
			cancel() // the caller gives up as the temp's read starts
		}
		return nil
	})
	t.Cleanup(func() { faults.Set(nil) })
	res, err := s.PromoteContext(ctx, next, PromoteRequest{PiVersion: testPi})
	faults.Set(nil)
	if reads != 1 {
		t.Fatalf("the roll-forward read the temp %d times; want 1", reads)
	}
	if res.Promoted || res.Reason != gates.PromoteFailed || !errors.Is(err, context.Canceled) {
		t.Fatalf("promote cancelled during its roll-forward = %+v, %v; want promote-failed with context.Canceled", res, err)
	}
	if after, _ := filepath.Glob(filepath.Join(root, testKey, tmpPrefix+"*")); len(after) != 1 || after[0] != temp {
		t.Fatalf("temps after the cancelled roll-forward: %v; want %s left as it was (the read stopped, nothing renamed or swept)", after, temp)
	}
	got, data := checkDescribed(t, s, root, testKey)
	if !got.Resume || got.Gen() != 2 || markerOf(data, 1) != "committed" {
		t.Fatalf("after the cancel: %+v holding %q; want the committed promotion (gen 2)", got, markerOf(data, 1))
	}
}

// A resolve's view reads a committed promotion's temp whole before it
// serves it, as the writer's roll-forward does, and that read took
// context.Background() too: a ResolveContext cancelled while it ran read
// on to the temp's end before the copy looked at ctx (a 256 MiB temp in
// the page cache held the cancel 65 to 189 ms, 0.24 to 0.40 ms since).
// ViewContext now returns the cancel from that read, the temp untouched
// (nothing is written under the shared lock).
func TestAViewCancelledWhileItReadsACommittedTempIsTheCancel(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "first")
	sess, jobDir := mustResolve(t, s, testKey, localJob())
	big := strings.Repeat("x", 4<<20)
	stage(t, jobDir, append(staged(t, jobDir), entryLine(big)+entryLine(big)+entryLine(big)+entryLine("committed")...))
	temp := crashAfterCommit(t, s, root, sess)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	reads := 0
	faults.Set(func(p faults.Point) error {
		if p == faults.PendingTempCheck {
			reads++
			cancel() // the caller gives up as the temp's read starts
		}
		return nil
	})
	t.Cleanup(func() { faults.Set(nil) })
	v, err := s.backend.(ContextBackend).ViewContext(ctx, testKey, gates.Bounds{})
	faults.Set(nil)
	if v != nil {
		v.Close()
	}
	if reads != 1 || v != nil || !errors.Is(err, context.Canceled) {
		t.Fatalf("a view cancelled as it read the temp (%d reads) = %v, %v; want no view, context.Canceled", reads, v, err)
	}
	if after, _ := filepath.Glob(filepath.Join(root, testKey, tmpPrefix+"*")); len(after) != 1 || after[0] != temp {
		t.Fatalf("temps after the cancelled view: %v; want %s", after, temp)
	}
	got, data := checkDescribed(t, s, root, testKey)
	if !got.Resume || got.Gen() != 2 || markerOf(data, 1) != "committed" {
		t.Fatalf("after the cancel: %+v holding %q; want the committed promotion (gen 2)", got, markerOf(data, 1))
	}
}
