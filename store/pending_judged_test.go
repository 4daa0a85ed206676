package store

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sessdb/db"
	"sessdb/gates"
	"sessdb/internal/faults"
)

// A committed promotion not yet renamed into place is the key's: a
// resolve copies its temp, and the ladder judges that temp, as it would
// judge the same file once the rename landed. A promoted run whose first
// line is not a session header (promote records any run's shape) was
// judged by the header of the generation before it, still in place: the
// resolve resumed a file it calls unparseable once the rename lands.
func TestAPendingTempIsJudgedByItsOwnFirstLine(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "before")
	sess, jobDir := mustResolve(t, s, testKey, localJob())
	stage(t, jobDir, []byte("not a session header\n"+entryLine("after")))
	faults.Set(func(p faults.Point) error {
		if p == faults.PromoteAfterCommit {
			return errors.New("crash")
		}
		return nil
	})
	res, _ := s.Promote(sess, PromoteRequest{PiVersion: testPi, AllowRewrite: true})
	faults.Set(nil)
	if temps, _ := filepath.Glob(filepath.Join(root, testKey, tmpPrefix+"*")); res.Promoted || len(temps) != 1 {
		t.Fatalf("the crashed promotion = %+v, %d temps", res, len(temps))
	}
	job := localJob()
	before, _ := mustResolve(t, s, testKey, localJob())
	if r := inspectOne(t, s, testKey, InspectOptions{Job: &job, Verify: true}); r.Verdict == nil || r.Verdict.Reason != string(before.Reason) {
		t.Errorf("dump's verdict %+v, resolve's %s: want them the same", r.Verdict, before.Reason)
	}
	if _, err := s.RollForward(testKey); err != nil {
		t.Fatal(err)
	}
	after, _ := mustResolve(t, s, testKey, localJob())
	if before.Reason != gates.Unparseable || after.Reason != gates.Unparseable {
		t.Errorf("resolve before the roll-forward %s, after it %s; want unparseable both times", before.Reason, after.Reason)
	}
}

// A committed promotion's temp that is not what its commit recorded is
// not the key's: the key holds the generation before it where that is in
// place (resumed), else the promotion is lost. The ladder judges what is
// served, never the damaged temp: its first line garbled, it named the
// cold start unparseable where nothing or something else was in place,
// and its header made older, conversation-too-old where the generation
// before it was in place and young. dump --verify says what resolve
// says, and dump without it where the damage changed the temp's size.
func TestADamagedPendingTempIsNotWhatTheLadderJudges(t *testing.T) {
	damages := []struct {
		name     string
		damage   func([]byte) []byte
		sizeKept bool
	}{
		{"its first line garbled", func(b []byte) []byte { copy(b, "garbage"); return b }, true},
		{"its header made older", func(b []byte) []byte { return bytes.Replace(b, []byte("2026-11-01T12"), []byte("2020-11-01T12"), 1) }, true},
		{"cut short", func(b []byte) []byte { return b[:len(b)/2] }, false},
	}
	inPlace := []struct {
		name string
		put  func(t *testing.T, cur string)
		want gates.Reason
	}{
		{"the generation before it", func(*testing.T, string) {}, gates.Resumed},
		{"nothing", func(t *testing.T, cur string) {
			if err := os.Remove(cur); err != nil {
				t.Fatal(err)
			}
		}, gates.PromotionLost},
		{"a directory", func(t *testing.T, cur string) {
			if err := os.Remove(cur); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(cur, 0o700); err != nil {
				t.Fatal(err)
			}
		}, gates.PromotionLost},
		{"another transcript", func(t *testing.T, cur string) {
			if err := os.WriteFile(cur, transcriptBytes(testClockStart, "out of band"), 0o600); err != nil {
				t.Fatal(err)
			}
		}, gates.PromotionLost},
	}
	for _, d := range damages {
		for _, in := range inPlace {
			t.Run(d.name+", "+in.name+" in place", func(t *testing.T) {
				s, root, _ := newTestStore(t, gates.Bounds{MaxAge: 30 * 24 * time.Hour})
				tmp := commitWithoutRename(t, s, root)
				b, err := os.ReadFile(tmp)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(tmp, d.damage(b), 0o600); err != nil {
					t.Fatal(err)
				}
				in.put(t, filepath.Join(root, testKey, TranscriptName))
				job := t.TempDir()
				got, err := s.Resolve(testKey, localJob(), job)
				if err != nil || got.Reason != in.want {
					t.Fatalf("resolve: %s, %v; want %s", got.Reason, err, in.want)
				}
				if got.Resume && (got.Gen() != 1 || markerOf(staged(t, job), 1) != "before") {
					t.Errorf("resumed gen %d holding %q; want gen 1, the generation before", got.Gen(), markerOf(staged(t, job), 1))
				}
				lj := localJob()
				for _, verify := range []bool{true, false} {
					if !verify && d.sizeKept {
						continue // known by its size alone, the temp looks whole
					}
					r := inspectOne(t, s, testKey, InspectOptions{Job: &lj, Verify: verify})
					if r.Verdict == nil || r.Verdict.Reason != string(got.Reason) {
						t.Errorf("dump (verify %v): verdict %+v; resolve said %s", verify, r.Verdict, got.Reason)
					}
				}
			})
		}
	}
}

// check's line about a promotion in flight whose temp is not what its
// commit recorded says what --repair's roll-forward does: it removes the
// temp and leaves the record pending, so a resolve serves the generation
// before it. It said the roll-forward "only clears the record", which is
// what it never does with such a temp.
func TestCheckSaysWhatTheRollForwardOfADamagedTempDoes(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	tmp := commitWithoutRename(t, s, root)
	if err := os.Truncate(tmp, 10); err != nil {
		t.Fatal(err)
	}
	found, _ := chkRun(t, s, false)
	f := chkFind(found, testKey+"/"+db.FileName, KindPendingPromotion)
	if f == nil || !strings.Contains(f.Detail, "removes it and leaves the record pending") {
		t.Fatalf("check's line: %+v; want it to say the roll-forward removes the temp and leaves the record pending", f)
	}
	chkRun(t, s, true)
	if _, err := os.Lstat(tmp); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the damaged temp after --repair: %v; want it removed", err)
	}
	withDB(t, root, testKey, func(tx *db.Tx) error {
		sc, err := tx.Sidecars()
		if err == nil && sc.Pending == nil {
			t.Error("the record after --repair: no pending entry; want it left pending")
		}
		return err
	})
	if sess, _ := mustResolve(t, s, testKey, localJob()); !sess.Resume || sess.Gen() != 1 {
		t.Errorf("resolve after --repair: %s, gen %d; want the generation before it, gen 1", sess.Reason, sess.Gen())
	}
}

// dump --verify of a committed promotion whose temp is damaged, with the
// generation before it in place, says that generation is what the key
// holds and why: what is wrong with the temp. It is not the line of a
// temp that is no regular file, which a damaged one is.
func TestDumpVerifyOfADamagedPendingTempSaysWhatIsWrongWithIt(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	tmp := commitWithoutRename(t, s, root)
	if err := os.Truncate(tmp, 10); err != nil {
		t.Fatal(err)
	}
	lj := localJob()
	r := inspectOne(t, s, testKey, InspectOptions{Job: &lj, Verify: true})
	want := "(its temp " + filepath.Base(tmp) + ": "
	if r.Verify == nil || r.Verify.Result != VerifyOK || !strings.Contains(r.Verify.Detail, want) || strings.Contains(r.Verify.Detail, "not a regular file") {
		t.Errorf("dump --verify: %+v; want ok, the generation before, with %q and what differs", r.Verify, want)
	}
}
