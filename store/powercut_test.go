package store

import (
	"errors"
	"os"
	"testing"

	"sessdb/gates"
	"sessdb/internal/durable/powercut"
	"sessdb/internal/faults"
)

// TestPowerCutAtEveryStep cuts the power at every write boundary of a
// promotion of "after" over an acknowledged "before". Whatever the point,
// an acknowledged promotion is never lost and the key never resumes what
// its record does not describe; a promotion that committed is rolled
// forward by the next writer.
func TestPowerCutAtEveryStep(t *testing.T) {
	for _, p := range []faults.Point{faults.PromoteAfterTempWrite, faults.PromoteAfterTempSync, faults.PromoteAfterCommit, faults.PromoteAfterRename, faults.PromoteAfterDirSync} {
		t.Run(string(p), func(t *testing.T) {
			s, root, _ := newTestStore(t, gates.Bounds{})
			journal := powercut.New()
			s.disk = diskWrites{journal}
			runJob(t, s, testKey, localJob(), PromoteRequest{}, "before")
			sess, jobDir := mustResolve(t, s, testKey, localJob())
			stage(t, jobDir, append(staged(t, jobDir), entryLine("after")...))
			faults.Set(func(q faults.Point) error {
				if q == p {
					return errors.New("power cut")
				}
				return nil
			})
			res, _ := s.Promote(sess, PromoteRequest{PiVersion: testPi})
			faults.Set(nil)
			journal.Cut(t)

			checkDescribed(t, s, root, testKey)
			if _, err := s.RollForward(testKey); err != nil {
				t.Fatal(err)
			}
			got, data := checkDescribed(t, s, root, testKey)
			if !got.Resume {
				t.Fatalf("after the power cut and roll-forward the key is cold (%s): the acknowledged %q is lost", got.Reason, "before")
			}
			marker := markerOf(data, 1)
			if res.Promoted && marker != "after" {
				t.Fatalf("promotion acknowledged at %s, but after the power cut the key holds %q", p, marker)
			}
			if marker != "before" && marker != "after" {
				t.Fatalf("key holds %q", marker)
			}
			assertNoTemps(t, root, testKey)
		})
	}
}

// TestPowerCutAfterAFirstPromotion cuts the power right after a key's
// first promotion is acknowledged: the key dir it made must be durable by
// then (the root fsynced after its mkdir), or the cut takes the key dir,
// and the acknowledged transcript with it.
func TestPowerCutAfterAFirstPromotion(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	if err := os.MkdirAll(root, 0o700); err != nil {
		t.Fatal(err)
	}
	journal := powercut.New()
	s.disk = diskWrites{journal}
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "first")
	journal.Cut(t)
	got, data := checkDescribed(t, s, root, testKey)
	if !got.Resume || markerOf(data, 1) != "first" {
		t.Fatalf("after the power cut the key is {resume %v, %s}: its acknowledged first promotion is lost", got.Resume, got.Reason)
	}
}
