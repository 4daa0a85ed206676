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

// crashAfterCommit promotes sess's staged run with a crash between the
// commit and the rename, and returns the committed promotion's temp.
func crashAfterCommit(t *testing.T, s *Store, root string, sess Session) string {
	t.Helper()
	faults.Set(func(p faults.Point) error {
		if p == faults.PromoteAfterCommit {
			return errors.New("crash")
		}
		return nil
	})
	t.Cleanup(func() { faults.Set(nil) })
	res, _ := s.Promote(sess, PromoteRequest{PiVersion: testPi})
	faults.Set(nil)
	temps, _ := filepath.Glob(filepath.Join(root, testKey, tmpPrefix+"*"))
	if res.Promoted || len(temps) != 1 {
		t.Fatalf("the crashed promotion = %+v, %d temps", res, len(temps))
	}
	return temps[0]
}

// loseTemp loses a committed promotion's temp: the key is left holding
// the generation before it, or nothing.
var loseTemp = map[string]func(string){
	"gone":    func(p string) { os.Remove(p) },
	"damaged": func(p string) { b, _ := os.ReadFile(p); b[len(b)-3] ^= 0xff; os.WriteFile(p, b, 0o600) },
}

// A key's first promotion committed and then lost before its rename
// leaves a key that holds no transcript. The retry of its ticket is no
// repeat (before: "promoted", repeat, gen 1, while a resolve found the key
// absent): the run, still in its job dir, is promoted onto the empty base
// it was resolved from, and resumes.
func TestRetryOfALostFirstPromotionPromotesIt(t *testing.T) {
	for name, lose := range loseTemp {
		t.Run(name, func(t *testing.T) {
			s, root, clock := newTestStore(t, gates.Bounds{})
			sess, jobDir := mustResolve(t, s, testKey, localJob())
			stage(t, jobDir, transcriptBytes(clock.now, "first run"))
			lose(crashAfterCommit(t, s, root, sess))
			retry := mustPromote(t, s, sess, PromoteRequest{PiVersion: testPi})
			if !retry.Promoted || retry.Repeat || retry.Gen != 2 {
				t.Fatalf("the retry = %+v; want promoted anew at gen 2 (gen 1 was lost)", retry)
			}
			got, data := checkDescribed(t, s, root, testKey)
			if !got.Resume || got.Gen() != 2 || markerOf(data, 1) != "first run" {
				t.Fatalf("after the retry: %+v holding %q; want the run's transcript at gen 2", got, markerOf(data, 1))
			}
		})
	}
}

// A job that cold-starts on a key whose last promotion's temp was lost
// (the key holds the generation before it, or nothing) promotes onto what
// the key holds. Before, its ticket named the record's generation, which
// the writer does not take the key to hold: every such job (after a pi
// upgrade, every job) was superseded, and the key never moved on.
func TestAJobColdOnALostPromotionsKeyPromotes(t *testing.T) {
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

				upgraded := localJob()
				upgraded.PiVersion = "9.9.9"
				cold, coldDir := mustResolve(t, s, testKey, upgraded)
				if cold.Resume {
					t.Fatal("a job with another pi version resumed the key")
				}
				stage(t, coldDir, transcriptBytes(clock.now, "cold"))
				if res := mustPromote(t, s, cold, PromoteRequest{PiVersion: "9.9.9"}); !res.Promoted {
					t.Fatalf("the cold job's promote = %+v; want promoted", res)
				}
				got, dir := mustResolve(t, s, testKey, upgraded)
				if data := staged(t, dir); !got.Resume || markerOf(data, 1) != "cold" {
					t.Fatalf("after the cold jobs: %+v holding %q; want the last cold run", got, markerOf(data, 1))
				}
			})
		}
	}
}

// A promotion committed and then lost before its rename (its temp gone,
// or damaged and swept) is not the key's: the key holds the generation
// before it. The job's retry with the same ticket is then no repeat: its
// transcript, still in its job dir, is promoted onto the generation it
// was resolved from, which is what the key holds, and resumes. Before, it
// was a repeat ("promoted", gen 2) of a promotion the key no longer had,
// and a worker that then discarded the job dir lost the run for good.
func TestRetryOfAPromotionLostBeforeItsRenamePromotesIt(t *testing.T) {
	for name, lose := range loseTemp {
		t.Run(name, func(t *testing.T) {
			s, root, _ := newTestStore(t, gates.Bounds{})
			runJob(t, s, testKey, localJob(), PromoteRequest{}, "before")
			sess, jobDir := mustResolve(t, s, testKey, localJob())
			stage(t, jobDir, append(staged(t, jobDir), entryLine("after")...))
			lose(crashAfterCommit(t, s, root, sess))
			retry := mustPromote(t, s, sess, PromoteRequest{PiVersion: testPi})
			if !retry.Promoted || retry.Repeat || retry.Gen != 3 {
				t.Fatalf("the retry = %+v; want promoted anew at gen 3 (gen 2 was lost)", retry)
			}
			got, data := checkDescribed(t, s, root, testKey)
			if !got.Resume || got.Gen() != 3 || markerOf(data, 1) != "after" {
				t.Fatalf("after the retry: %+v holding %q; want the run's transcript at gen 3", got, markerOf(data, 1))
			}
		})
	}
}

// A promotion committed and then lost before its rename, after which the
// transcript in place was also replaced out of band: the key's record
// still waits for the lost promotion (a resolve says promotion-lost, or,
// for a temp that is gone, transcript-replaced), and the file in place is
// neither that promotion's nor the one before it. The key holds nothing
// of the run, so the retry with its ticket is no repeat. Its run is
// exactly what the record names: it is promoted again onto the record, as
// a job resolved there now would be, and the key resumes it. After the
// operator's accept of the file in place, which made that file the key's
// gen 3, the retry is judged on its base, and is superseded by it, its
// run left in its job dir. Before, both were a repeat ("promoted", gen 2)
// while the key held the foreign file, and a worker that then discarded
// the job dir lost the run.
func TestRetryOfALostPromotionWhoseKeyWasAlsoReplaced(t *testing.T) {
	for _, accept := range []bool{false, true} {
		for name, lose := range loseTemp {
			t.Run(map[bool]string{false: "retried/", true: "accepted, then retried/"}[accept]+name, func(t *testing.T) {
				s, root, clock := newTestStore(t, gates.Bounds{})
				runJob(t, s, testKey, localJob(), PromoteRequest{}, "before")
				sess, jobDir := mustResolve(t, s, testKey, localJob())
				lostRun := append(staged(t, jobDir), entryLine("lost")...)
				stage(t, jobDir, lostRun)
				lose(crashAfterCommit(t, s, root, sess))
				replaceInPlace(t, root, transcriptBytes(clock.now, "out of band"))
				if got, _ := mustResolve(t, s, testKey, localJob()); got.Resume {
					t.Fatalf("the key resumes %+v with its promotion lost and its file replaced", got)
				}
				wantMarker := "lost"
				if accept {
					if acc, err := s.Accept(testKey); err != nil || acc.Gen != 3 {
						t.Fatalf("accept = %+v, %v; want gen 3", acc, err)
					}
					wantMarker = "out of band"
				}

				retry := mustPromote(t, s, sess, PromoteRequest{PiVersion: testPi})
				switch {
				case !accept && (!retry.Promoted || retry.Repeat || retry.Gen != 3):
					t.Fatalf("the retry = %+v; want promoted anew at gen 3 (gen 2 was lost, the file in place is not the run)", retry)
				case accept && (retry.Promoted || retry.Repeat || retry.Reason != gates.Superseded || retry.SupersededBy != 3):
					t.Fatalf("the retry = %+v; want superseded by the accepted gen 3", retry)
				}
				if got := staged(t, jobDir); !bytes.Equal(got, lostRun) {
					t.Fatal("the retried run left its job dir")
				}
				got, data := checkDescribed(t, s, root, testKey)
				if !got.Resume || got.Gen() != 3 || markerOf(data, 1) != wantMarker {
					t.Fatalf("after the retry: %+v holding %q; want %q at gen 3", got, markerOf(data, 1), wantMarker)
				}
			})
		}
	}
}

// replaceInPlace writes data over the test key's transcript, out of band.
func replaceInPlace(t *testing.T, root string, data []byte) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(root, testKey, TranscriptName), data, 0o600); err != nil {
		t.Fatal(err)
	}
}
