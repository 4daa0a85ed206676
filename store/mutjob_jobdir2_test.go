package store

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"sessdb/gates"
	"sessdb/internal/faults"
)

// A fault at the staged file's create (after the old one is unlinked) is
// the resolve's: it fails with it, and leaves no ticket and no staged
// file, as every other fault of a resolve does.
func TestAFaultAfterTheStagedUnlinkFailsTheResolve(t *testing.T) {
	s, _, _ := newTestStore(t, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "a")
	_, jobDir := mustResolve(t, s, testKey, localJob())
	boom := errors.New("the staged file's create failed")
	fired := insideAt(t, faults.StagedAfterUnlink, func() error { return boom })
	_, err := s.Resolve(testKey, localJob(), jobDir)
	if !*fired || !errors.Is(err, boom) {
		t.Fatalf("resolve = %v (fault point reached: %v); want the fault's error", err, *fired)
	}
	for _, name := range []string{TicketName, filepath.Join(StagedDirName, TranscriptName)} {
		if _, err := os.Lstat(filepath.Join(jobDir, name)); !os.IsNotExist(err) {
			t.Errorf("%s after the failed resolve: %v; want none", name, err)
		}
	}
}

// A promote whose job dir, or whose job dir's staged dir, is not there
// (the worker removed it, the job never ran, a file is at its name) has
// nothing to promote: it is absent, not a fault, and the key is left as
// it is.
func TestAPromoteWithNoJobDirOrStagedDirIsAbsent(t *testing.T) {
	for name, remove := range map[string]func(jobDir string) error{
		"no job dir":    os.RemoveAll,
		"no staged dir": func(jobDir string) error { return os.RemoveAll(filepath.Join(jobDir, StagedDirName)) },
		// A path that names no directory: no job dir there either.
		"a file at the job dir's name": func(jobDir string) error {
			if err := os.RemoveAll(jobDir); err != nil {
				return err
			}
			return os.WriteFile(jobDir, nil, 0o600)
		},
	} {
		t.Run(name, func(t *testing.T) {
			s, root, _ := newTestStore(t, gates.Bounds{})
			runJob(t, s, testKey, localJob(), PromoteRequest{}, "a")
			before := readCanonical(t, root, testKey)
			sess, jobDir := mustResolve(t, s, testKey, localJob())
			if err := remove(jobDir); err != nil {
				t.Fatal(err)
			}
			res, err := s.Promote(sess, PromoteRequest{PiVersion: testPi})
			if err != nil || res.Promoted || res.Reason != gates.Absent {
				t.Fatalf("promote = %+v, %v; want absent, no error", res, err)
			}
			if got := readCanonical(t, root, testKey); string(got) != string(before) {
				t.Fatal("the key changed")
			}
		})
	}
}

// A Session read from its job dir (TicketFromJobDir) whose Key the
// worker's code changed since is refused, nothing written: its run was
// resolved for the ticket's key, and a cold one (no base to lose) would
// make the other key a conversation no job resolved there.
func TestASessionWhoseKeyWasChangedSinceItsTicketWasReadIsRefused(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	other := Key("github", "acme/widget", "pi/issue-2")
	sess, jobDir := mustResolve(t, s, testKey, localJob())
	want(t, sess, false, gates.Absent)
	stage(t, jobDir, append(transcriptBytes(s.opts.Now()), entryLine("the run of testKey")...))
	read, err := ReadTicket(jobDir)
	if err != nil {
		t.Fatal(err)
	}
	read.Key = other
	res, err := s.Promote(read, PromoteRequest{PiVersion: testPi, TicketFromJobDir: true})
	if !errors.Is(err, ErrBadTicket) || res.Promoted {
		t.Fatalf("promote = %+v, %v; want ErrBadTicket", res, err)
	}
	for _, key := range []string{testKey, other} {
		if _, err := os.Lstat(filepath.Join(root, key, TranscriptName)); !os.IsNotExist(err) {
			t.Errorf("key %s has a transcript: %v", key, err)
		}
	}
}

// A job dir that holds the store's directory further up than its parent
// (its grandparent) is refused as the parent is: the worker's clean-up
// of the job dir would remove the store.
func TestAJobDirTwoLevelsAboveTheStoreIsRefused(t *testing.T) {
	base := t.TempDir()
	s, _, _ := newTestStoreAt(t, filepath.Join(base, "var", "sessions"), gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "a")
	if _, err := s.Resolve(testKey, localJob(), base); !errors.Is(err, ErrJobDirInStore) {
		t.Fatalf("a job dir two levels above the store: %v; want ErrJobDirInStore", err)
	}
	if _, err := os.Lstat(filepath.Join(base, StagedDirName)); !os.IsNotExist(err) {
		t.Fatalf("the refused resolve made %s: %v", StagedDirName, err)
	}
}

// A staged file of exactly the size bound is promoted; a byte more is
// too-large (the bound is the most a transcript may be, as the ladder's
// rung 4 reads it). A torn last line counts the newline the promotion
// adds.
func TestAStagedFileOfExactlyTheSizeBoundIsPromoted(t *testing.T) {
	run := func(t *testing.T, extra int, torn bool) PromoteResult {
		t.Helper()
		data := append(transcriptBytes(time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)), entryLine("run")...)
		max := int64(len(data))
		s, _, _ := newTestStore(t, gates.Bounds{MaxBytes: max})
		sess, jobDir := mustResolve(t, s, testKey, localJob())
		if torn {
			data = data[:len(data)-1]
		}
		data = append(data, bytes.Repeat([]byte("\n"), extra)...)
		stage(t, jobDir, data)
		return mustPromote(t, s, sess, PromoteRequest{PiVersion: testPi})
	}
	if res := run(t, 0, false); !res.Promoted {
		t.Errorf("a staged file of the bound: %+v; want promoted", res)
	}
	if res := run(t, 0, true); !res.Promoted {
		t.Errorf("a torn staged file a byte under the bound: %+v; want promoted", res)
	}
	if res := run(t, 1, false); res.Promoted || res.Reason != gates.TooLarge {
		t.Errorf("a staged file a byte over the bound: %+v; want too-large", res)
	}
}
