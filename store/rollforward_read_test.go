package store

import (
	"errors"
	"path/filepath"
	"testing"

	"sessdb/gates"
	"sessdb/internal/faults"
)

// The next writer's roll-forward reads a committed promotion's temp to
// tell whole from damaged. A read that fails (an I/O error) tells
// neither: the writer fails, and the temp, the promotion's only copy, is
// neither renamed nor swept; the writer after it rolls it forward.
func TestRollForwardThatCannotReadTheTempRemovesNothing(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "first")
	sess, jobDir := mustResolve(t, s, testKey, localJob())
	stage(t, jobDir, append(staged(t, jobDir), entryLine("committed")...))
	temp := crashAfterCommit(t, s, root, sess)

	eio := errors.New("input/output error")
	faults.Set(func(p faults.Point) error {
		if p == faults.RollForwardTempRead {
			return eio
		}
		return nil
	})
	next, nextDir := mustResolve(t, s, testKey, localJob())
	stage(t, nextDir, append(staged(t, nextDir), entryLine("next")...))
	res, err := s.Promote(next, PromoteRequest{PiVersion: testPi})
	if res.Promoted || res.Reason != gates.PromoteFailed || !errors.Is(err, eio) {
		t.Fatalf("promote whose roll-forward could not read the temp = %+v, %v; want promote-failed with the read's error", res, err)
	}
	if after, _ := filepath.Glob(filepath.Join(root, testKey, tmpPrefix+"*")); len(after) != 1 || after[0] != temp {
		t.Fatalf("temps after the failed read: %v, want %v kept", after, temp)
	}

	faults.Set(nil)
	got, data := checkDescribed(t, s, root, testKey)
	if !got.Resume || got.Gen() != 2 || markerOf(data, 1) != "committed" {
		t.Fatalf("after the read recovered: %+v holding %q; want the committed promotion (gen 2)", got, markerOf(data, 1))
	}
}
