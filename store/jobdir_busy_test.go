package store

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"sessdb/gates"
	"sessdb/internal/faults"
)

// Two resolves into one job dir at once (a worker that gave up on a slow
// resolve and used the dir again) are one resolve and one ErrJobDirBusy:
// the job dir then holds one resolve's ticket and that resolve's
// transcript. Before, the second, run whole while the first waited
// between its judgement and its copy, staged key B's conversation and
// its ticket; the first then copied A's into a file no longer at the
// staged name and wrote key A's ticket, beside B's conversation, and A's
// promote put B's conversation into A.
func TestTwoResolvesIntoOneJobDirAtOnceAreOneAndBusy(t *testing.T) {
	s, _, _ := newTestStore(t, gates.Bounds{})
	a, b := Key("github", "acme/busy", "a"), Key("github", "acme/busy", "b")
	runJob(t, s, a, localJob(), PromoteRequest{}, "a's conversation")
	runJob(t, s, b, localJob(), PromoteRequest{}, "b's conversation")
	jobDir := t.TempDir()
	var second error
	fired := insideAt(t, faults.ResolveAfterGates, func() error {
		_, second = s.Resolve(b, localJob(), jobDir)
		return nil
	})
	first, err := s.Resolve(a, localJob(), jobDir)
	faults.Set(nil)
	if err != nil || !*fired {
		t.Fatalf("the first resolve: %v (the second run inside it: %v)", err, *fired)
	}
	if !errors.Is(second, ErrJobDirBusy) {
		t.Errorf("the second resolve, into the job dir the first was using: %v; want ErrJobDirBusy", second)
	}
	ticket, err := ReadTicket(jobDir)
	if err != nil {
		t.Fatal(err)
	}
	if ticket.Key != a || ticket.Ticket != first.Ticket {
		t.Errorf("the job dir's ticket is key %s's (ticket %s); want the first resolve's, key %s's", ticket.Key, ticket.Ticket, a)
	}
	if got := markerOf(staged(t, jobDir), 1); got != "a's conversation" || !first.Resume {
		t.Errorf("the job dir's staged transcript holds %q (the first resolve: %s); want a's conversation, resumed", got, first.Reason)
	}
}

// A promote while a resolve stages into the same job dir is
// ErrJobDirBusy, nothing written: the staged file it would read is the
// resolve's, not the run its Session describes.
func TestAPromoteWhileAResolveUsesItsJobDirIsBusy(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	key := Key("github", "acme/busy", "promote")
	runJob(t, s, key, localJob(), PromoteRequest{}, "before")
	sess, jobDir := mustResolve(t, s, key, localJob())
	stage(t, jobDir, append(staged(t, jobDir), entryLine("the run")...))
	before, err := os.ReadFile(filepath.Join(root, key, TranscriptName))
	if err != nil {
		t.Fatal(err)
	}
	var promoted error
	fired := insideAt(t, faults.ResolveAfterGates, func() error {
		_, promoted = s.Promote(sess, PromoteRequest{PiVersion: testPi})
		return nil
	})
	if _, err := s.Resolve(key, localJob(), jobDir); err != nil || !*fired {
		t.Fatalf("the resolve: %v (the promote run inside it: %v)", err, *fired)
	}
	faults.Set(nil)
	if !errors.Is(promoted, ErrJobDirBusy) {
		t.Errorf("the promote while a resolve used its job dir: %v; want ErrJobDirBusy", promoted)
	}
	if after, err := os.ReadFile(filepath.Join(root, key, TranscriptName)); err != nil || string(after) != string(before) {
		t.Errorf("the key's transcript after the busy promote: %d bytes, %v; want it unchanged", len(after), err)
	}
}

// The lock is the staged dir's, not the job dir's: a worker that holds
// its job dir's flock around its commands (flock(1) $JOB sessdb …)
// resolves and promotes as before.
func TestAWorkersOwnFlockOnItsJobDirIsNotBusy(t *testing.T) {
	s, _, _ := newTestStore(t, gates.Bounds{})
	key := Key("github", "acme/busy", "flock")
	jobDir := t.TempDir()
	jd, err := os.Open(jobDir)
	if err != nil {
		t.Fatal(err)
	}
	defer jd.Close()
	if err := unix.Flock(int(jd.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	sess, err := s.Resolve(key, localJob(), jobDir)
	if err != nil {
		t.Fatalf("resolve into a job dir its worker holds the flock of: %v", err)
	}
	stage(t, jobDir, transcriptBytes(testClockStart, "the run"))
	if res, err := s.Promote(sess, PromoteRequest{PiVersion: testPi}); err != nil || !res.Promoted {
		t.Fatalf("promote from a job dir its worker holds the flock of: %+v, %v", res, err)
	}
}

// insideAt arms a fault hook that, the first time point is reached, runs
// inside (another call into the store at that moment) and fails the
// point with its error; it reports, once the call is made, whether the
// point was reached.
func insideAt(t *testing.T, point faults.Point, inside func() error) (fired *bool) {
	t.Helper()
	fired = new(bool)
	faults.Set(func(p faults.Point) error {
		if p == point && !*fired {
			*fired = true
			return inside()
		}
		return nil
	})
	t.Cleanup(func() { faults.Set(nil) })
	return fired
}

// A resolve that finds its job dir busy removes nothing, the ticket
// included: a promote under way there, which then fails (here at its
// temp's write), is retried as the CLI retries it, by reading the job
// dir's ticket again. Before the lock was taken ahead of the ticket's
// removal, the busy resolve removed the ticket of the run it left in
// place, and no retry could find what to promote.
func TestABusyResolveLeavesTheJobDirsTicket(t *testing.T) {
	s, _, _ := newTestStore(t, gates.Bounds{})
	a, b := Key("github", "acme/busy", "a"), Key("github", "acme/busy", "b")
	runJob(t, s, b, localJob(), PromoteRequest{}, "b's conversation")
	sessA, jobDir := mustResolve(t, s, a, localJob())
	stage(t, jobDir, transcriptBytes(testClockStart, "a's run"))
	var resolved error
	fired := insideAt(t, faults.PromoteAfterTempWrite, func() error {
		_, resolved = s.Resolve(b, localJob(), jobDir)
		return errors.New("the promote fails after the resolve")
	})
	if res, err := s.Promote(sessA, PromoteRequest{PiVersion: testPi, TicketFromJobDir: true}); err == nil || res.Promoted || !*fired {
		t.Fatalf("the failing promote: %+v, %v (the resolve run inside it: %v)", res, err, *fired)
	}
	faults.Set(nil)
	if !errors.Is(resolved, ErrJobDirBusy) {
		t.Fatalf("the resolve into the job dir a promote was using: %v; want ErrJobDirBusy", resolved)
	}
	retry, err := ReadTicket(jobDir)
	if err != nil || retry.Ticket != sessA.Ticket {
		t.Fatalf("the job dir's ticket after the busy resolve: %q, %v; want a's, %q, for the promote's retry", retry.Ticket, err, sessA.Ticket)
	}
	if res, err := s.Promote(retry, PromoteRequest{PiVersion: testPi, TicketFromJobDir: true}); err != nil || !res.Promoted {
		t.Errorf("the retry of a's promote from the job dir's ticket: %+v, %v; want promoted", res, err)
	}
}

// Where the staged dir cannot be flocked (a file system that refuses a
// directory's flock, or takes none and says it did), a job resolves and
// promotes unlocked, as before the lock, and is never ErrJobDirBusy: the
// lock guards a worker's misuse, and a refusal taken for another's hold
// would make every job on such a file system busy for ever.
func TestWhereAStagedDirCannotBeFlockedAJobIsNotBusy(t *testing.T) {
	for _, fs := range noDirFlocks {
		t.Run(fs.name, func(t *testing.T) {
			noDirFlock(t, fs.err)
			s, _, _ := newTestStore(t, gates.Bounds{})
			sess, jobDir := mustResolve(t, s, testKey, localJob())
			stage(t, jobDir, transcriptBytes(testClockStart, "the run"))
			if res, err := s.Promote(sess, PromoteRequest{PiVersion: testPi, TicketFromJobDir: true}); err != nil || !res.Promoted {
				t.Fatalf("promote: %+v, %v; want promoted", res, err)
			}
			// The store asks no flock of the staged dir there: one the
			// test holds on it (the host's file system takes it) is not
			// seen, as a flock(2) that fails or locks nothing sees none.
			held, err := os.Open(filepath.Join(jobDir, StagedDirName))
			if err != nil {
				t.Fatal(err)
			}
			defer held.Close()
			if err := unix.Flock(int(held.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
				t.Fatal(err)
			}
			if again, err := s.Resolve(testKey, localJob(), jobDir); err != nil || !again.Resume {
				t.Errorf("a second resolve into the job dir: %s, %v; want the run resumed", again.Reason, err)
			}
		})
	}
}
