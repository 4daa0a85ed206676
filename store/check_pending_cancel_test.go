package store

import (
	"context"
	"errors"
	"strings"
	"testing"

	"sessdb/gates"
	"sessdb/internal/faults"
)

// check reads a committed promotion's temp whole (it may be gigabytes)
// to say whether a roll-forward would rename it. That read took
// context.Background(): a check interrupted while it ran (Ctrl-C, a
// caller's cancel) read on to the temp's end, and here, its last key,
// returned a nil error as if never interrupted (a 256 MiB temp in the
// page cache held the interrupt 81 to 93 ms; 0.19 to 0.46 ms since). It
// takes the walk's ctx now, and a read the interrupt stopped ends the
// walk with the interrupt, with no finding about a temp it did not read.
func TestACheckInterruptedWhileItReadsAPendingTempIsTheInterrupt(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "first")
	sess, jobDir := mustResolve(t, s, testKey, localJob())
	big := strings.Repeat("x", 4<<20)
	stage(t, jobDir, append(staged(t, jobDir), entryLine(big)+entryLine(big)+entryLine(big)+entryLine("committed")...))
	crashAfterCommit(t, s, root, sess)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	reads := 0
	faults.Set(func(p faults.Point) error {
		if p == faults.PendingTempCheck {
			reads++
			cancel()
		}
		return nil
	})
	t.Cleanup(func() { faults.Set(nil) })
	var found []Finding
	_, err := s.Check(ctx, CheckOptions{}, func(f Finding) error { found = append(found, f); return nil })
	faults.Set(nil)
	if reads != 1 || !errors.Is(err, context.Canceled) {
		t.Fatalf("check interrupted as it read the pending temp (%d reads): %v; want context.Canceled", reads, err)
	}
	for _, f := range found {
		if f.Kind == KindPendingPromotion || f.Kind == KindUnreadable {
			t.Errorf("a finding about the temp the interrupt stopped reading: %+v", f)
		}
	}
}
