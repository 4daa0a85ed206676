package store

import (
	"os"
	"testing"

	"sessdb/gates"
	"sessdb/internal/faults"
)

// A committed promotion's temp that a resolve found at its name and that
// is gone when it opens it (removed by hand in between; an lstat failing
// for want of kernel memory looks the same) is settled, as it would be had
// it been gone at the look: the resolve serves what is in place. It
// served nothing: the ladder judged current.jsonl's observation, and the
// copy read the temp it never opened, a nil file (the process died of a
// nil pointer dereference); dump and check (which serve the temp too)
// likewise.
func TestPendingTempGoneAfterItsLookIsSettled(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "before")
	sess, jobDir := mustResolve(t, s, testKey, localJob())
	stage(t, jobDir, append(staged(t, jobDir), entryLine("lost")...))
	tmp := crashAfterCommit(t, s, root, sess)
	removed := 0
	faults.Set(func(p faults.Point) error {
		if p == faults.PendingAfterLook && removed == 0 {
			removed++
			return os.Remove(tmp)
		}
		return nil
	})
	t.Cleanup(func() { faults.Set(nil) })
	got, dir := mustResolve(t, s, testKey, localJob())
	if removed != 1 {
		t.Fatal("the resolve never looked at the pending promotion's temp")
	}
	// The generation before the lost promotion is in place: the key holds it.
	want(t, got, true, gates.Resumed)
	if data := staged(t, dir); got.Gen() != 1 || markerOf(data, 1) != "before" {
		t.Fatalf("resumed gen %d holding %q; want gen 1, the generation in place", got.Gen(), markerOf(data, 1))
	}
}
