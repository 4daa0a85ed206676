package store

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"sessdb/gates"
	"sessdb/internal/faults"
)

// A fault where a promote has decided its refusal, before the refusal's
// record (faults.PromoteRefusalDecided: "an error here is that record
// failing"), is promote-failed with that error, nothing recorded, and the
// retry refuses the run again. The conformance suite's Refuser only runs a
// function at the point and returns nil, so a promote that dropped the
// point's error and returned the refusal unrecorded (mutant S04) passed
// every test.
func TestAFaultAtTheRefusalsRecordIsPromoteFailed(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	stale, staleDir, staleData := contractJob(t, s, testKey, "stale")
	stage(t, staleDir, answeredTurn(staleData, "stale", 1000))
	sess, dir, data := contractJob(t, s, testKey, "first")
	stage(t, dir, answeredTurn(data, "1", 1000))
	if res := mustPromote(t, s, sess, PromoteRequest{PiVersion: testPi}); !res.Promoted {
		t.Fatalf("the first promote: %+v", res)
	}
	meta := filepath.Join(root, testKey, "meta.db")
	before, err := os.ReadFile(meta)
	if err != nil {
		t.Fatal(err)
	}
	lost := errors.New("the refusal's record failed")
	fired := false
	faults.Set(func(p faults.Point) error {
		if p == faults.PromoteRefusalDecided && !fired {
			fired = true
			return lost
		}
		return nil
	})
	t.Cleanup(func() { faults.Set(nil) })
	res, err := s.Promote(stale, PromoteRequest{PiVersion: testPi})
	faults.Set(nil)
	if !fired || !errors.Is(err, lost) || res.Promoted || res.Reason != gates.PromoteFailed {
		t.Fatalf("fired %v: a promote whose refusal's record failed = %+v, %v; want promote-failed with the fault", fired, res, err)
	}
	if after, err := os.ReadFile(meta); err != nil || !bytes.Equal(after, before) {
		t.Fatalf("meta.db changed (%v): a refusal whose record failed was recorded", err)
	}
	if res := mustPromote(t, s, stale, PromoteRequest{PiVersion: testPi}); res.Reason != gates.Superseded {
		t.Fatalf("the retry = %+v, want superseded", res)
	}
}
