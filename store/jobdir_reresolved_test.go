package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"sessdb/gates"
	"sessdb/internal/faults"
)

// A promote reads its ticket (the CLI: ReadTicket), then opens the staged
// file under the staged dir's lock. A resolve of another key into the
// same job dir between the two (a worker that gave up on a slow promote
// and used the dir again) ran whole, the lock free: the promote then
// opened that resolve's staged file, and a cold start's ticket, whose run
// has no prefix to check, promoted key B's conversation into key A. With
// TicketFromJobDir (the CLI's promote), the ticket is read again under the
// lock; a Session kept in memory across a later resolve (the reference
// model's jobs in another job's dir) is judged as before without it.
func TestAPromoteAfterItsJobDirWasResolvedAgainDoesNotPromoteTheOtherKey(t *testing.T) {
	s, _, _ := newTestStore(t, gates.Bounds{})
	a, b := Key("github", "acme/busy", "a"), Key("github", "acme/busy", "b")
	runJob(t, s, b, localJob(), PromoteRequest{}, "b's conversation")
	sessA, jobDir := mustResolve(t, s, a, localJob())
	if sessA.Resume {
		t.Fatalf("key a resolved %s; want a cold start", sessA.Reason)
	}
	stage(t, jobDir, transcriptBytes(testClockStart, "a's run"))
	ticket, err := ReadTicket(jobDir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Resolve(b, localJob(), jobDir); err != nil {
		t.Fatal(err)
	}
	res, err := s.Promote(ticket, PromoteRequest{PiVersion: testPi, TicketFromJobDir: true})
	if res.Promoted || !errors.Is(err, ErrJobDirBusy) {
		t.Errorf("promote of a's ticket from the job dir b was resolved into since: %+v, %v; want ErrJobDirBusy", res, err)
	}
	if after, _ := mustResolve(t, s, a, localJob()); after.Resume {
		t.Errorf("key a holds %q; want nothing (never b's conversation)", markerOf(staged(t, after.JobDir), 1))
	}
	// b's own promote, from the same job dir, still promotes.
	sessB, err := ReadTicket(jobDir)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := s.Promote(sessB, PromoteRequest{PiVersion: testPi, TicketFromJobDir: true}); err != nil || !res.Promoted {
		t.Errorf("b's promote: %+v, %v", res, err)
	}
}

// A resolve into a job dir while its promote is under way (past the open
// of the staged file: the promote reads, stages and commits it after) is
// ErrJobDirBusy, the run left in place. Before, the lock was the open's
// alone: the resolve replaced the staged file and the ticket, and a
// promote that then failed (here at its temp's write; a key locked past
// the timeout is another) left no run in the job dir for its retry,
// which README promises it ("its run left").
func TestAResolveWhileAPromoteUsesItsJobDirIsBusy(t *testing.T) {
	s, _, _ := newTestStore(t, gates.Bounds{})
	a, b := Key("github", "acme/busy", "a"), Key("github", "acme/busy", "b")
	runJob(t, s, b, localJob(), PromoteRequest{}, "b's conversation")
	sessA, jobDir := mustResolve(t, s, a, localJob())
	run := transcriptBytes(testClockStart, "a's run")
	stage(t, jobDir, run)
	var resolved error
	fired := insideAt(t, faults.PromoteAfterTempWrite, func() error {
		_, resolved = s.Resolve(b, localJob(), jobDir)
		return errors.New("the promote fails after the resolve")
	})
	if res, err := s.Promote(sessA, PromoteRequest{PiVersion: testPi}); err == nil || res.Promoted || !*fired {
		t.Fatalf("the failing promote: %+v, %v (the resolve run inside it: %v)", res, err, *fired)
	}
	faults.Set(nil)
	if !errors.Is(resolved, ErrJobDirBusy) {
		t.Errorf("the resolve into the job dir a promote was using: %v; want ErrJobDirBusy", resolved)
	}
	if got := staged(t, jobDir); string(got) != string(run) {
		t.Errorf("the job dir's staged file after the busy resolve: %q; want a's run, for the promote's retry", markerOf(got, 1))
	}
	if res, err := s.Promote(sessA, PromoteRequest{PiVersion: testPi}); err != nil || !res.Promoted {
		t.Errorf("the retry of a's promote: %+v, %v; want promoted", res, err)
	}
}

// A promote (TicketFromJobDir) whose job dir's ticket is gone since it
// was read is ErrJobDirBusy, nothing written and the run left in place:
// a ticket removed by hand cannot be told from one a resolve removed
// before it staged and was killed (below), whose staged file is another
// key's. Before, only a ticket naming another id was refused, and this
// promoted whatever was staged.
func TestAPromoteWhoseTicketWasRemovedSinceItWasReadIsBusy(t *testing.T) {
	s, _, _ := newTestStore(t, gates.Bounds{})
	_, jobDir := mustResolve(t, s, testKey, localJob())
	run := transcriptBytes(testClockStart, "the run")
	stage(t, jobDir, run)
	sess, err := ReadTicket(jobDir)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(jobDir, TicketName)); err != nil {
		t.Fatal(err)
	}
	if res, err := s.Promote(sess, PromoteRequest{PiVersion: testPi, TicketFromJobDir: true}); res.Promoted || !errors.Is(err, ErrJobDirBusy) {
		t.Errorf("promote of a ticket since removed from its job dir: %+v, %v; want ErrJobDirBusy", res, err)
	}
	if got := staged(t, jobDir); string(got) != string(run) {
		t.Errorf("the staged file after the refused promote: %q; want the run, left in place", markerOf(got, 1))
	}
	// Without the check (a Session kept in memory), it promotes as before.
	if res, err := s.Promote(sess, PromoteRequest{PiVersion: testPi}); err != nil || !res.Promoted {
		t.Errorf("promote of the Session without TicketFromJobDir: %+v, %v; want promoted", res, err)
	}
}

// A resolve killed between its copy and its ticket (SIGKILL, a power cut
// of the worker's process: the staged dir's lock goes with it) leaves
// the staged file it copied and no ticket at all, the earlier one
// removed first. A promote that read the earlier ticket before that
// resolve (the CLI reads it unlocked) then found no ticket under the
// lock, took "no ticket" for nothing to say, and promoted the killed
// resolve's staged file: a cold start's ticket, with no prefix to
// check, put key B's conversation into key A. A ticket gone since it
// was read says the job dir was resolved again, as another id does.
func TestAPromoteAfterAResolveKilledInItsJobDirDoesNotPromoteTheOtherKey(t *testing.T) {
	s, _, _ := newTestStore(t, gates.Bounds{})
	// The resolve of b dies after its copy: runtime.Goexit runs its
	// deferred closes (the locks a killed process's death lets go of)
	// and nothing else, so its clean-up of the staged file never runs.
	a, ticket, jobDir, _ := aTicketReadBeforeAResolveOfB(t, s, func() error { runtime.Goexit(); return nil })
	if _, err := ReadTicket(jobDir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the job dir's ticket after the killed resolve: %v; want none", err)
	}
	if got := staged(t, jobDir); markerOf(got, 1) != "b's conversation" {
		t.Fatalf("the job dir's staged file after the killed resolve: %q; want b's conversation", markerOf(got, 1))
	}
	res, err := s.Promote(ticket, PromoteRequest{PiVersion: testPi, TicketFromJobDir: true})
	if res.Promoted || !errors.Is(err, ErrJobDirBusy) {
		t.Errorf("promote of a's ticket from the job dir a killed resolve of b used since: %+v, %v; want ErrJobDirBusy", res, err)
	}
	if after, _ := mustResolve(t, s, a, localJob()); after.Resume {
		t.Errorf("key a holds %q; want nothing (never b's conversation)", markerOf(staged(t, after.JobDir), 1))
	}
}

// aTicketReadBeforeAResolveOfB reads key a's cold-start ticket from its
// job dir, as the CLI's promote reads it (unlocked), and then runs a
// resolve of key b, which holds a conversation, in the same job dir,
// stopped after its copy by stop (in a goroutine of its own, so that stop
// may end it by runtime.Goexit). It returns a's key, the ticket, the job
// dir and the resolve's error.
func aTicketReadBeforeAResolveOfB(t *testing.T, s *Store, stop func() error) (a string, ticket Session, jobDir string, resolved error) {
	t.Helper()
	a, b := Key("github", "acme/busy", "a"), Key("github", "acme/busy", "b")
	runJob(t, s, b, localJob(), PromoteRequest{}, "b's conversation")
	sessA, jobDir := mustResolve(t, s, a, localJob())
	if sessA.Resume {
		t.Fatalf("key a resolved %s; want a cold start", sessA.Reason)
	}
	stage(t, jobDir, transcriptBytes(testClockStart, "a's run"))
	ticket, err := ReadTicket(jobDir)
	if err != nil {
		t.Fatal(err)
	}
	fired := insideAt(t, faults.ResolveAfterCopy, stop)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, resolved = s.Resolve(b, localJob(), jobDir)
	}()
	<-done
	faults.Set(nil)
	if !*fired {
		t.Fatal("the resolve of b never reached its copy")
	}
	return a, ticket, jobDir, resolved
}

// A ticket from before the job contract has no id, and the check above
// was made only for one with an id: a job resolved by the old binary,
// whose promote read its ticket just before a resolve of key b ran in
// the same job dir, promoted b's conversation into its own key (its
// cold start promotes with no base and no prefix check). Every resolve
// since the contract writes an id: a ticket that names one now was
// written since the old one was read.
func TestAPromoteOfAnOldTicketAfterItsJobDirWasResolvedAgainDoesNotPromoteTheOtherKey(t *testing.T) {
	s, _, _ := newTestStore(t, gates.Bounds{})
	a, b := Key("github", "acme/busy", "a"), Key("github", "acme/busy", "b")
	runJob(t, s, b, localJob(), PromoteRequest{}, "b's conversation")
	jobDir := t.TempDir()
	stage(t, jobDir, transcriptBytes(testClockStart, "a's run"))
	old := fmt.Sprintf(`{"key":%q,"resume":false,"reason":"absent","bytes":0,"venue":"local","job_dir":"/run/jobs/old"}`, a)
	if err := os.WriteFile(filepath.Join(jobDir, TicketName), []byte(old), 0o600); err != nil {
		t.Fatal(err)
	}
	ticket, err := ReadTicket(jobDir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Resolve(b, localJob(), jobDir); err != nil {
		t.Fatal(err)
	}
	res, err := s.Promote(ticket, PromoteRequest{PiVersion: testPi, TicketFromJobDir: true})
	if res.Promoted || !errors.Is(err, ErrJobDirBusy) {
		t.Errorf("promote of a's old ticket from the job dir b was resolved into since: %+v, %v; want ErrJobDirBusy", res, err)
	}
	if after, _ := mustResolve(t, s, a, localJob()); after.Resume {
		t.Errorf("key a holds %q; want nothing (never b's conversation)", markerOf(staged(t, after.JobDir), 1))
	}
	// Read again, unchanged, the old ticket still promotes.
	jobDir = t.TempDir()
	stage(t, jobDir, transcriptBytes(testClockStart, "a's run"))
	if err := os.WriteFile(filepath.Join(jobDir, TicketName), []byte(old), 0o600); err != nil {
		t.Fatal(err)
	}
	if ticket, err = ReadTicket(jobDir); err != nil {
		t.Fatal(err)
	}
	if res, err := s.Promote(ticket, PromoteRequest{PiVersion: testPi, TicketFromJobDir: true}); err != nil || !res.Promoted {
		t.Errorf("promote of an old ticket from its job dir, unchanged: %+v, %v; want promoted", res, err)
	}
}

// A resolve that fails cleanly in the job dir removes the ticket and its
// own staged file: nothing is left there to promote into the wrong key.
// A promote (TicketFromJobDir) of the ticket read before it finds the
// staged file absent, as it always did, and is refused so (absent: the
// CLI's exit 0, nothing to keep), not ErrJobDirBusy, which told it to
// retry a promote whose next read finds no ticket at all.
func TestAPromoteAfterAResolveFailedInItsJobDirFindsNothingStaged(t *testing.T) {
	s, _, _ := newTestStore(t, gates.Bounds{})
	failed := errors.New("the copy's check failed")
	_, ticket, jobDir, err := aTicketReadBeforeAResolveOfB(t, s, func() error { return failed })
	if !errors.Is(err, failed) {
		t.Fatalf("the resolve of b: %v; want it failed after its copy", err)
	}
	if _, err := os.Lstat(filepath.Join(jobDir, StagedDirName, TranscriptName)); !os.IsNotExist(err) {
		t.Fatalf("the staged file after the failed resolve: %v; want none", err)
	}
	res, err := s.Promote(ticket, PromoteRequest{PiVersion: testPi, TicketFromJobDir: true})
	if err != nil || res.Promoted || res.Reason != gates.Absent {
		t.Errorf("promote of a's ticket after a failed resolve of b: %+v, %v; want refused, absent", res, err)
	}
}
