package store

import (
	"errors"
	"testing"

	"sessdb/gates"
	"sessdb/internal/faults"
)

// A transcript whose first line could not be read (an I/O error) says
// nothing of its header: the resolve is a fault (exit 1, no ticket), as
// when its copy cannot be read. It was judged as a first line that is not
// a session header, unparseable: a closed rung's cold start whose ticket
// carries the key's base, so the job's cold run then replaced the
// conversation. dump reported the key unparseable too.
func TestTranscriptHeaderNotReadIsAFault(t *testing.T) {
	s, _, _ := newTestStore(t, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "one")
	eio := errors.New("input/output error")
	faults.Set(func(p faults.Point) error {
		if p == faults.TranscriptHeaderRead {
			return eio
		}
		return nil
	})
	t.Cleanup(func() { faults.Set(nil) })
	sess, err := s.Resolve(testKey, localJob(), t.TempDir())
	if !errors.Is(err, eio) {
		t.Fatalf("resolve with the header's read failing = {resume %v, %s}, %v; want the read's error", sess.Resume, sess.Reason, err)
	}
	faults.Set(nil)
	sess, _ = mustResolve(t, s, testKey, localJob())
	want(t, sess, true, gates.Resumed)
}

// A committed promotion's damaged temp sends the resolve back to the
// transcript in place; that transcript's header, not read (an I/O error),
// is a fault too, not promotion-lost (a closed rung: nothing says the
// generation in place is not there).
func TestTranscriptHeaderNotReadAfterADamagedTempIsAFault(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "before")
	sess, jobDir := mustResolve(t, s, testKey, localJob())
	stage(t, jobDir, append(staged(t, jobDir), entryLine("damaged")...))
	loseTemp["damaged"](crashAfterCommit(t, s, root, sess))
	eio := errors.New("input/output error")
	reads := 0
	faults.Set(func(p faults.Point) error {
		if p == faults.TranscriptHeaderRead {
			if reads++; reads == 3 { // current.jsonl, the temp, then current.jsonl again
				return eio
			}
		}
		return nil
	})
	t.Cleanup(func() { faults.Set(nil) })
	got, err := s.Resolve(testKey, localJob(), t.TempDir())
	if !errors.Is(err, eio) {
		t.Fatalf("resolve with the header in place not read after a damaged temp = {resume %v, %s}, %v (%d header reads); want the read's error", got.Resume, got.Reason, err, reads)
	}
	faults.Set(nil)
	got, _ = mustResolve(t, s, testKey, localJob())
	want(t, got, true, gates.Resumed)
}
