package store_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"sessdb/gates"
	"sessdb/store"
)

// The store's Go API as a worker's code uses it: what a fault leaves in
// the job dir.

// A resolve that fails leaves no ticket in the job dir, not even an
// earlier resolve's, and no staged file: a worker that runs the job
// anyway, or a promote of the job dir, finds nothing to hand over or to
// promote. The store's root is relative and the working directory it was
// taken from is gone, so the root cannot be named: the very first step
// fails.
func TestResolveThatCannotNameItsRootLeavesNoEarlierTicket(t *testing.T) {
	base := t.TempDir()
	cwd := filepath.Join(base, "cwd")
	if err := os.Mkdir(cwd, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Chdir(cwd)
	s, err := store.New("sessions", store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	key := store.Key("github", "acme/widget", "pi/issue-42")
	job := store.Job{PiVersion: "0.58.3", Venue: "local", ID: "job-1"}
	jobDir := filepath.Join(base, "job")
	if _, err := s.Resolve(key, job, jobDir); err != nil {
		t.Fatal(err)
	}
	if _, err := store.ReadTicket(jobDir); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(cwd); err != nil {
		t.Fatal(err)
	}
	if wd, err := os.Getwd(); err == nil {
		t.Fatalf("the working directory is still named, %s: the test makes no fault", wd)
	}
	if _, err := s.Resolve(key, job, jobDir); err == nil {
		t.Fatal("resolved with a root that cannot be named")
	}
	if _, err := os.Lstat(filepath.Join(jobDir, store.TicketName)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the earlier resolve's ticket is still in the job dir (%v)", err)
	}
	if _, err := os.Lstat(filepath.Join(jobDir, store.StagedDirName, store.TranscriptName)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the earlier resolve's staged file is still in the job dir (%v)", err)
	}
}

// A reading the caller gives must be one: a negative window or token
// count is refused before anything is written, as the CLI refuses it
// (exit 2). Taken, a negative window cleared the key's reading (no
// measurement) and negative tokens were stored as one: either way the
// context bound never refused the conversation again.
func TestPromoteRefusesANegativeReading(t *testing.T) {
	base := t.TempDir()
	s, err := store.New(filepath.Join(base, "sessions"), store.Options{Bounds: gates.Bounds{MaxContextPct: 50}})
	if err != nil {
		t.Fatal(err)
	}
	key := store.Key("github", "acme/widget", "pi/issue-42")
	job := store.Job{PiVersion: "0.58.3", Venue: "local", Model: "anthropic/claude-sonnet-4-5"}
	full := int64(190000) // of the model's 200000
	for i, req := range []store.PromoteRequest{
		{PiVersion: "0.58.3", Tokens: &full},
		{PiVersion: "0.58.3", Window: -1},
		{PiVersion: "0.58.3", Tokens: ptr(int64(-1))},
	} {
		jobDir := filepath.Join(base, fmt.Sprint("job-", i))
		sess, err := s.Resolve(key, job, jobDir)
		if err != nil {
			t.Fatal(err)
		}
		if i > 0 && sess.Reason != gates.ContextTooFull {
			t.Fatalf("request %d: resolved %s, want context-too-full", i, sess.Reason)
		}
		if err := appendTurn(filepath.Join(jobDir, store.StagedDirName, store.TranscriptName), 1, "go on"); err != nil {
			t.Fatal(err)
		}
		res, err := s.Promote(sess, req)
		switch {
		case i == 0 && (err != nil || !res.Promoted):
			t.Fatalf("the full run: %+v, %v", res, err)
		case i > 0 && (err == nil || res.Promoted || res.Reason == gates.PromoteFailed):
			t.Errorf("request %d (window %d): %+v, %v; want an error before anything is written", i, req.Window, res, err)
		}
	}
}

func ptr[T any](v T) *T { return &v }
