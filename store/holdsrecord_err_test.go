package store

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"syscall"
	"testing"

	"sessdb/gates"
	"sessdb/internal/faults"
)

// failHoldsRecord makes HoldsRecord's read fail with EIO until the
// returned function is called, and counts the reads it failed.
func failHoldsRecord(t *testing.T) (hits *int, clear func()) {
	t.Helper()
	hits = new(int)
	faults.Set(func(p faults.Point) error {
		if p == faults.HoldsRecordRead {
			*hits++
			return syscall.EIO
		}
		return nil
	})
	t.Cleanup(func() { faults.Set(nil) })
	return hits, func() { faults.Set(nil) }
}

// A ticket's retry of the promotion the key's record names asks whether
// the key still holds that file (HoldsRecord). When that read fails
// (EIO), it tells nothing: the retry is promote-failed with the cause,
// nothing written, the run in its job dir. Never "promoted" as a repeat
// (the key may hold nothing of the run: its file lost or replaced), and
// never promoted again (the key may hold it: a duplicate generation).
// Once the read works, the retry is what it would have been: a repeat
// where the key holds the run, promoted anew at gen 3 where it does not.
func TestARetryWhoseHoldsRecordReadFailsIsPromoteFailed(t *testing.T) {
	for _, replaced := range []bool{false, true} {
		t.Run(map[bool]string{false: "held", true: "replaced"}[replaced], func(t *testing.T) {
			s, root, clock := newTestStore(t, gates.Bounds{})
			runJob(t, s, testKey, localJob(), PromoteRequest{}, "before")
			sess, jobDir := mustResolve(t, s, testKey, localJob())
			run := append(staged(t, jobDir), entryLine("run")...)
			stage(t, jobDir, run)
			if res := mustPromote(t, s, sess, PromoteRequest{PiVersion: testPi}); !res.Promoted || res.Gen != 2 {
				t.Fatalf("promote = %+v; want gen 2", res)
			}
			if replaced {
				replaceInPlace(t, root, transcriptBytes(clock.now, "out of band"))
			}
			inPlace, err := os.ReadFile(filepath.Join(root, testKey, TranscriptName))
			if err != nil {
				t.Fatal(err)
			}
			sc, history := sidecarsOf(t, root, testKey), historyOf(t, root, testKey)

			hits, clear := failHoldsRecord(t)
			res, err := s.Promote(sess, PromoteRequest{PiVersion: testPi})
			clear()
			if *hits == 0 {
				t.Fatal("the retry never asked HoldsRecord")
			}
			if !errors.Is(err, syscall.EIO) || res.Promoted || res.Repeat || res.Reason != gates.PromoteFailed {
				t.Fatalf("the retry whose HoldsRecord read failed = %+v, %v; want promote-failed with EIO", res, err)
			}
			if now := sidecarsOf(t, root, testKey); !reflect.DeepEqual(now, sc) {
				t.Errorf("the record changed: %+v, was %+v", now, sc)
			}
			if now := historyOf(t, root, testKey); !reflect.DeepEqual(now, history) {
				t.Errorf("the history changed: %+v, was %+v", now, history)
			}
			if now, _ := os.ReadFile(filepath.Join(root, testKey, TranscriptName)); !bytes.Equal(now, inPlace) {
				t.Error("the transcript in place changed")
			}
			if !bytes.Equal(staged(t, jobDir), run) {
				t.Fatal("the run left its job dir")
			}

			retry := mustPromote(t, s, sess, PromoteRequest{PiVersion: testPi})
			switch {
			case !replaced && (!retry.Promoted || !retry.Repeat || retry.Gen != 2):
				t.Fatalf("the retry once the read works = %+v; want a repeat of gen 2", retry)
			case replaced && (!retry.Promoted || retry.Repeat || retry.Gen != 3):
				t.Fatalf("the retry once the read works = %+v; want promoted anew at gen 3", retry)
			}
			got, data := checkDescribed(t, s, root, testKey)
			if !got.Resume || got.Gen() != retry.Gen || markerOf(data, 1) != "run" {
				t.Fatalf("after the retry: %+v holding %q; want the run at gen %d", got, markerOf(data, 1), retry.Gen)
			}
		})
	}
}

// A retry of a promotion lost before its rename (its temp gone or
// damaged: the key holds the generation before it, or nothing) is told by
// what Begin settled: the key is back at the run's base, which the writer
// takes it to hold (cur), below the record's generation. It reads nothing
// more, so a read of the record's file that would fail does not fail it:
// it is promoted anew. (Asked there, HoldsRecord could only say "not
// held", or fail: the retry of a run the key does not hold would then be
// promote-failed until the read worked.)
func TestARetryOfALostPromotionReadsNoRecordFile(t *testing.T) {
	for _, first := range []bool{false, true} {
		for name, lose := range loseTemp {
			t.Run(map[bool]string{false: "later/", true: "first/"}[first]+name, func(t *testing.T) {
				s, root, clock := newTestStore(t, gates.Bounds{})
				if !first {
					runJob(t, s, testKey, localJob(), PromoteRequest{}, "before")
				}
				sess, jobDir := mustResolve(t, s, testKey, localJob())
				if first {
					stage(t, jobDir, transcriptBytes(clock.now, "lost"))
				} else {
					stage(t, jobDir, append(staged(t, jobDir), entryLine("lost")...))
				}
				lose(crashAfterCommit(t, s, root, sess))
				lost := sidecarsOf(t, root, testKey).Transcript.Gen

				failHoldsRecord(t)
				res, err := s.Promote(sess, PromoteRequest{PiVersion: testPi})
				faults.Set(nil)
				if err != nil || !res.Promoted || res.Repeat || res.Gen != lost+1 {
					t.Fatalf("the retry of lost gen %d = %+v, %v; want promoted anew at gen %d", lost, res, err, lost+1)
				}
				got, data := checkDescribed(t, s, root, testKey)
				if !got.Resume || got.Gen() != lost+1 || markerOf(data, 1) != "lost" {
					t.Fatalf("after the retry: %+v holding %q; want the run at gen %d", got, markerOf(data, 1), lost+1)
				}
			})
		}
	}
}
