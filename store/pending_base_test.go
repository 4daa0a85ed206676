package store

import (
	"errors"
	"testing"

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
