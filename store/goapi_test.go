package store_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

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
