package store

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"sessdb/gates"
	"sessdb/internal/faults"
)

// A promotion committed and then lost before its rename (its temp gone,
// or damaged), after which another job, resolved on what the key holds
// (the generation before it, or nothing for a key's first promotion),
// promotes: the key's transcript is that job's, and holds nothing of the
// lost run, though its generation is numbered above the lost one. The
// lost promotion's retry with its own ticket is then no repeat (the key
// has not held its generation since), and its base is gone: superseded
// by the other job's generation, its run left in its job dir. Before, it
// was a repeat ("promoted" at the lost generation), and a worker that
// then discarded the job dir lost the run.
func TestRetryOfALostPromotionAfterAnotherJobPromotedIsSuperseded(t *testing.T) {
	for _, first := range []bool{false, true} {
		for name, lose := range loseTemp {
			t.Run(map[bool]string{false: "later/", true: "first/"}[first]+name, func(t *testing.T) {
				s, root, clock := newTestStore(t, gates.Bounds{})
				if !first {
					runJob(t, s, testKey, localJob(), PromoteRequest{}, "before")
				}
				sess, jobDir := mustResolve(t, s, testKey, localJob())
				lostRun := append(staged(t, jobDir), entryLine("lost")...)
				if first {
					lostRun = transcriptBytes(clock.now, "lost")
				}
				stage(t, jobDir, lostRun)
				lose(crashAfterCommit(t, s, root, sess))
				lostGen := sidecarsOf(t, root, testKey).Transcript.Gen

				other, otherDir := mustResolve(t, s, testKey, localJob())
				if other.Base.Gen != lostGen-1 {
					t.Fatalf("the other job resolved on gen %d, want gen %d (gen %d was lost)", other.Base.Gen, lostGen-1, lostGen)
				}
				run := staged(t, otherDir)
				if first {
					run = transcriptBytes(clock.now)
				}
				stage(t, otherDir, append(run, entryLine("other")...))
				if res := mustPromote(t, s, other, PromoteRequest{PiVersion: testPi}); !res.Promoted || res.Gen != lostGen+1 {
					t.Fatalf("the other job's promote = %+v; want promoted at gen %d", res, lostGen+1)
				}

				retry := mustPromote(t, s, sess, PromoteRequest{PiVersion: testPi})
				if retry.Promoted || retry.Repeat || retry.Reason != gates.Superseded || retry.SupersededBy != lostGen+1 {
					t.Fatalf("the lost promotion's retry = %+v; want superseded by gen %d (the key holds the other job's run, nothing of the lost one)", retry, lostGen+1)
				}
				if got := staged(t, jobDir); !bytes.Equal(got, lostRun) {
					t.Fatal("the lost run left its job dir")
				}
				got, data := checkDescribed(t, s, root, testKey)
				if !got.Resume || got.Gen() != lostGen+1 || markerOf(data, 1) != "other" {
					t.Fatalf("after the retry: %+v holding %q; want the other job's run at gen %d", got, markerOf(data, 1), lostGen+1)
				}
			})
		}
	}
}

// A job's promotion killed at each of its steps, another job on the same
// key resolved before the kill (both from gen 1, as the fleet's
// TestTwoJobsOfOneGenerationWithALostCommitAnswerPromoteOne has them) or
// after it, that job's promote, then the killed job's retry with its
// ticket. Killed before its commit, the killed promotion is nothing: the
// other job resumes gen 1 and promotes gen 2, and the retry is superseded
// by it, its run left in its job dir. Killed after its commit, it is the
// key's gen 2 (served from its temp until rolled forward): the other job,
// resolved before, is superseded by it; resolved after, it resumes it and
// promotes gen 3 on it; the retry repeats gen 2, nothing written. Either
// way the key holds every promotion that was the key's, in order.
func TestKilledPromoteThenAnotherJobThenTheRetry(t *testing.T) {
	for _, otherFirst := range []bool{true, false} {
		for _, p := range []faults.Point{faults.PromoteAfterTempWrite, faults.PromoteAfterTempSync, faults.PromoteAfterCommit, faults.PromoteAfterRename, faults.PromoteAfterDirSync} {
			t.Run(map[bool]string{true: "resolved before/", false: "resolved after/"}[otherFirst]+string(p), func(t *testing.T) {
				killedThenOther(t, p, otherFirst)
			})
		}
	}
}

func killedThenOther(t *testing.T, p faults.Point, otherFirst bool) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "before")
	committed := p != faults.PromoteAfterTempWrite && p != faults.PromoteAfterTempSync
	var other Session
	var otherDir string
	resolveOther := func() {
		other, otherDir = mustResolve(t, s, testKey, localJob())
		want(t, other, true, gates.Resumed)
		handed := map[bool]string{false: "before", true: "killed"}[committed && !otherFirst]
		if got := markerOf(staged(t, otherDir), 1); got != handed {
			t.Fatalf("the other job was handed %q, want %q", got, handed)
		}
		stage(t, otherDir, append(staged(t, otherDir), entryLine("other")...))
	}
	if otherFirst {
		resolveOther()
	}
	killed, killedDir := killedPromote(t, root, p, "killed")
	killedRun := staged(t, killedDir)
	if !otherFirst {
		resolveOther()
	}

	// The key's last generation, and the marker it ends with.
	last, lastMarker := uint64(2), "other"
	res := mustPromote(t, s, other, PromoteRequest{PiVersion: testPi})
	switch {
	case committed && otherFirst:
		if res.Promoted || res.Reason != gates.Superseded || res.SupersededBy != 2 {
			t.Fatalf("the other job's promote = %+v; want superseded by the killed job's gen 2", res)
		}
		lastMarker = "killed"
	case committed:
		last = 3
		fallthrough
	default:
		if !res.Promoted || res.Gen != last {
			t.Fatalf("the other job's promote = %+v; want promoted at gen %d", res, last)
		}
	}

	retry := mustPromote(t, s, killed, PromoteRequest{PiVersion: testPi})
	switch {
	case committed && (!retry.Promoted || !retry.Repeat || retry.Gen != 2):
		t.Fatalf("the killed job's retry = %+v; want a repeat of gen 2", retry)
	case !committed && (retry.Promoted || retry.Reason != gates.Superseded || retry.SupersededBy != 2):
		t.Fatalf("the killed job's retry = %+v; want superseded by gen 2", retry)
	}
	if got := staged(t, killedDir); !bytes.Equal(got, killedRun) {
		t.Fatal("the killed job's run left its job dir")
	}
	got, data := checkDescribed(t, s, root, testKey)
	if !got.Resume || got.Gen() != last || markerOf(data, 1) != lastMarker {
		t.Fatalf("after the retry: %+v holding %q; want %q at gen %d", got, markerOf(data, 1), lastMarker, last)
	}
	if committed && !otherFirst && markerOf(data, 2) != "killed" {
		t.Fatalf("the committed promotion is not under the other job's run: %q", markerOf(data, 2))
	}
}

// A resolve and a promote of a key whose lock another job's promotion
// holds (stopped inside it, its temp written): neither waits past its
// lock timeout, and neither changes anything. The resolve is a cold start
// named locked whose ticket has no base: its run, promoted once the
// promotion has landed, is superseded by it, never promoted over it. The
// promote is locked, the key unchanged, its run in its job dir; its
// retry is judged on the key as it is then: superseded by the promotion
// that held the lock. A resolve that waits longer is handed that
// promotion whole.
func TestAResolveAndAPromoteMeetingAPromotionThatHoldsTheLock(t *testing.T) {
	s, root, clock := newTestStore(t, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "base")
	quick, err := New(root, Options{Now: clock.Now, LockTimeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	holder, holderDir, holderData := contractJob(t, s, testKey, "holder")
	stage(t, holderDir, answeredTurn(holderData, "holder", 100))
	waiter, waiterDir, waiterData := contractJob(t, s, testKey, "waiter")
	waiterRun := answeredTurn(waiterData, "waiter", 100)
	stage(t, waiterDir, waiterRun)

	held, release := make(chan struct{}), make(chan struct{})
	faults.Set(func(q faults.Point) error {
		if q == faults.PromoteAfterTempSync {
			faults.Set(nil)
			close(held)
			<-release
		}
		return nil
	})
	t.Cleanup(func() { faults.Set(nil) })
	done := make(chan PromoteResult, 1)
	go func() {
		res, err := s.Promote(holder, PromoteRequest{PiVersion: testPi})
		if err != nil {
			t.Errorf("the holder's promote: %v", err)
		}
		done <- res
	}()
	<-held
	before := treeState(t, root)

	lockedJob := localJob()
	lockedJob.ID = "locked"
	cold, coldDir := mustResolve(t, quick, testKey, lockedJob)
	want(t, cold, false, gates.Locked)
	if cold.Base != (Base{}) {
		t.Fatalf("a resolve that never read the key has a base: %+v", cold.Base)
	}
	if res := mustPromote(t, quick, waiter, PromoteRequest{PiVersion: testPi}); res.Promoted || res.Reason != gates.Locked {
		t.Fatalf("a promote under the held lock = %+v; want locked", res)
	}
	if after := treeState(t, root); after != before {
		t.Fatal("a resolve or a promote under the held lock changed the key")
	}
	// One that waits longer is handed the promotion once it has landed.
	patient := make(chan Session, 1)
	go func() {
		sess, err := s.Resolve(testKey, localJob(), filepath.Join(t.TempDir(), "patient"))
		if err != nil {
			t.Errorf("a resolve waiting for the lock: %v", err)
		}
		patient <- sess
	}()
	close(release)
	if res := <-done; !res.Promoted || res.Gen != 2 {
		t.Fatalf("the holder's promote = %+v; want gen 2", res)
	}
	if sess := <-patient; !sess.Resume || sess.Base.Gen != 2 {
		t.Fatalf("a resolve waiting for the lock = %+v; want gen 2 resumed", sess)
	}

	coldRun := answeredTurn(transcriptBytes(clock.now), "locked", 100)
	stage(t, coldDir, coldRun)
	if res := mustPromote(t, s, cold, PromoteRequest{PiVersion: testPi}); res.Promoted || res.Reason != gates.Superseded || res.SupersededBy != 2 {
		t.Fatalf("the locked resolve's run = %+v; want superseded by gen 2", res)
	}
	if res := mustPromote(t, s, waiter, PromoteRequest{PiVersion: testPi}); res.Promoted || res.Reason != gates.Superseded || res.SupersededBy != 2 {
		t.Fatalf("the locked promote's retry = %+v; want superseded by gen 2", res)
	}
	if !bytes.Equal(staged(t, coldDir), coldRun) || !bytes.Equal(staged(t, waiterDir), waiterRun) {
		t.Fatal("a refused run left its job dir")
	}
	got, data := checkDescribed(t, s, root, testKey)
	if !got.Resume || got.Gen() != 2 || !bytes.Contains(data, []byte("answer holder")) {
		t.Fatalf("the key after them: %+v; want the holder's run at gen 2", got)
	}
}

// A promote that meets a resolve of the same key holding its shared lock
// (stopped after its copy) is locked, changing nothing, and its retry,
// once the resolve is done, promotes: the key still holds its base.
func TestAPromoteMeetingAResolveThatHoldsTheLockPromotesOnItsRetry(t *testing.T) {
	s, root, clock := newTestStore(t, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "base")
	quick, err := New(root, Options{Now: clock.Now, LockTimeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	job, jobDir, data := contractJob(t, s, testKey, "job")
	stage(t, jobDir, answeredTurn(data, "job", 100))
	var during PromoteResult
	var before, after string
	met := false
	faults.Set(func(q faults.Point) error {
		if q == faults.ResolveAfterCopy && !met {
			met = true
			before = treeState(t, root)
			during = mustPromote(t, quick, job, PromoteRequest{PiVersion: testPi})
			after = treeState(t, root)
		}
		return nil
	})
	t.Cleanup(func() { faults.Set(nil) })
	reader, _ := mustResolve(t, s, testKey, localJob())
	faults.Set(nil)
	want(t, reader, true, gates.Resumed)
	if !met || during.Promoted || during.Reason != gates.Locked {
		t.Fatalf("a promote under a resolve's lock = %+v (met %v); want locked", during, met)
	}
	if after != before {
		t.Fatal("a locked promote changed the key")
	}
	if res := mustPromote(t, s, job, PromoteRequest{PiVersion: testPi}); !res.Promoted || res.Repeat || res.Gen != 2 {
		t.Fatalf("the retry once the resolve was done = %+v; want promoted at gen 2", res)
	}
}

// The other half of TestAColdRunWhoseKeyWasReapedSinceIsPromoted, as the
// fleet's test of that name has it: a job that resumed the key, whose key
// reaches its TTL and is reaped before the job promotes, is superseded by
// the key that holds nothing (superseded_by 0), its run left in its job
// dir: a resumed run would bring back a conversation removed since. The
// key stays empty.
func TestAResumedRunWhoseKeyWasReapedSinceIsSuperseded(t *testing.T) {
	const ttl = time.Hour
	s, root, clock := newTestStore(t, gates.Bounds{TTL: ttl})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "the old conversation")
	clock.now = clock.now.Add(ttl / 2)
	warm, warmDir, data := contractJob(t, s, testKey, "warm")
	want(t, warm, true, gates.Resumed)
	run := answeredTurn(data, "more", 100)
	stage(t, warmDir, run)
	clock.now = clock.now.Add(ttl)
	if res, err := s.Reap(false); err != nil || len(res.Removed) != 1 {
		t.Fatalf("reap: %+v, %v", res, err)
	}
	res := mustPromote(t, s, warm, PromoteRequest{PiVersion: testPi})
	if res.Promoted || res.Reason != gates.Superseded || res.SupersededBy != 0 {
		t.Fatalf("the resumed job's promote once its key was reaped = %+v; want superseded by nothing", res)
	}
	if !bytes.Equal(staged(t, warmDir), run) {
		t.Fatal("the resumed job's run left its job dir")
	}
	sess, _ := mustResolve(t, s, testKey, localJob())
	want(t, sess, false, gates.Absent)
	if _, err := os.Stat(filepath.Join(root, testKey, TranscriptName)); !os.IsNotExist(err) {
		t.Fatalf("the reaped conversation was brought back: %v", err)
	}
}

// The staged name swapped after promote opened and read the staged file,
// while the promotion waits for the key's lock (db-open/writer): for a
// link to a file the job can see, a FIFO, another job's transcript
// renamed over it, or a longer file. The promotion reads only through
// the descriptor it judged: it promotes exactly the run it read, never
// opens the new name (no hang on the FIFO, nothing read or written
// through the link), and leaves what was swapped in as it was.
func TestStagedNameSwappedWhilePromoteWaitsForTheLock(t *testing.T) {
	swaps := map[string]func(t *testing.T, name, victim string){
		"link": func(t *testing.T, name, victim string) {
			os.Remove(name)
			if err := os.Symlink(victim, name); err != nil {
				t.Error(err)
			}
		},
		"fifo": func(t *testing.T, name, _ string) {
			os.Remove(name)
			if err := unix.Mkfifo(name, 0o600); err != nil {
				t.Error(err)
			}
		},
		"another job's transcript": func(t *testing.T, name, victim string) {
			if err := os.Link(victim, name+".other"); err != nil {
				t.Error(err)
			}
			if err := os.Rename(name+".other", name); err != nil {
				t.Error(err)
			}
		},
		"a longer file": func(t *testing.T, name, _ string) {
			b, err := os.ReadFile(name)
			if err != nil {
				t.Error(err)
			}
			tmp := name + ".longer"
			if err := os.WriteFile(tmp, append(b, entryLine("swapped in")...), 0o600); err != nil {
				t.Error(err)
			}
			if err := os.Rename(tmp, name); err != nil {
				t.Error(err)
			}
		},
	}
	for what, swap := range swaps {
		t.Run(what, func(t *testing.T) {
			s, root, _ := newTestStore(t, gates.Bounds{})
			runJob(t, s, testKey, localJob(), PromoteRequest{}, "before")
			victim := filepath.Join(t.TempDir(), "victim.jsonl")
			victimBytes := append(transcriptBytes(time.Now()), entryLine("another job's run")...)
			if err := os.WriteFile(victim, victimBytes, 0o600); err != nil {
				t.Fatal(err)
			}
			sess, jobDir := mustResolve(t, s, testKey, localJob())
			run := append(staged(t, jobDir), entryLine("the run")...)
			stage(t, jobDir, run)
			name := filepath.Join(jobDir, StagedDirName, TranscriptName)
			swapped := false
			faults.Set(func(p faults.Point) error {
				if p == faults.DBOpenWriter && !swapped {
					swapped = true
					swap(t, name, victim)
				}
				return nil
			})
			t.Cleanup(func() { faults.Set(nil) })
			res, err := s.Promote(sess, PromoteRequest{PiVersion: testPi})
			faults.Set(nil)
			if !swapped {
				t.Fatal("the promotion never reached the meta.db open: this test proves nothing")
			}
			if err != nil || !res.Promoted || res.Gen != 2 || res.Bytes != int64(len(run)) {
				t.Fatalf("promote with the staged name swapped after its read = %+v, %v; want the run read, promoted at gen 2", res, err)
			}
			if got := readCanonical(t, root, testKey); !bytes.Equal(got, run) {
				t.Fatalf("the key holds %d bytes ending %q, not the run promote read", len(got), markerOf(got, 1))
			}
			if got, err := os.ReadFile(victim); err != nil || !bytes.Equal(got, victimBytes) {
				t.Fatalf("the file swapped in changed: %v", err)
			}
			checkDescribed(t, s, root, testKey)
		})
	}
}
