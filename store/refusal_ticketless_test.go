package store

import (
	"testing"

	"sessdb/gates"
)

// A refusal is recorded once per ticket and reason (RefusalRecorded), so
// that a runner that retries cannot push promotions out of the ring; a
// ticket from before the job contract has no id, and its refusals are no
// one job's retries to tell apart: each is recorded. Two such cold starts
// onto a key that holds a transcript are each superseded, and the history
// holds both refusals (db.HistoryEntry.RecordedBy's "no entry is by the
// empty ticket" is what keeps the second; no test pinned it).
func TestRefusalsWithNoTicketAreEachRecorded(t *testing.T) {
	s, root, clock := newTestStore(t, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "base")
	for i := range 2 {
		dir := t.TempDir()
		stage(t, dir, transcriptBytes(clock.Now(), "another conversation"))
		sess := Session{Key: testKey, JobDir: dir, Reason: gates.Absent, Job: "old-job"}
		res := mustPromote(t, s, sess, PromoteRequest{PiVersion: testPi})
		if res.Promoted || res.Reason != gates.Superseded {
			t.Fatalf("ticketless cold start %d onto gen 1: %+v; want superseded", i, res)
		}
		clock.now = clock.now.Add(1)
	}
	n := 0
	for _, e := range historyOf(t, root, testKey) {
		if e.Outcome == string(gates.Superseded) && e.Ticket == "" {
			n++
		}
	}
	if n != 2 {
		t.Fatalf("the history holds %d ticketless superseded refusals; want 2, one each", n)
	}
}
