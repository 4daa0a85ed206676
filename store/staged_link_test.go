package store

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"sessdb/gates"
	"sessdb/internal/faults"
)

// A hard link the job makes at its staged name between the resolve's
// unlink of what was there and its create of the fresh file (to a file
// the job can see: another key's transcript, the worker's own) fails the
// create, EEXIST: it is never opened, and the copy of the key's
// transcript never written into its target (mutation sweep, mutants3's
// jobdir #23: O_EXCL dropped from the create, the copy wrote the key's
// transcript over the victim's bytes; no test could pause there).
func TestStagedNameLinkedAfterItsUnlinkIsNeverWrittenThrough(t *testing.T) {
	s, _, _ := newTestStore(t, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "before")
	victim := filepath.Join(t.TempDir(), "victim.jsonl")
	want := []byte("the victim's own bytes, which no resolve may touch\n")
	if err := os.WriteFile(victim, want, 0o600); err != nil {
		t.Fatal(err)
	}
	jobDir := t.TempDir()
	linked := 0
	faults.Set(func(p faults.Point) error {
		if p == faults.StagedAfterUnlink {
			linked++
			return os.Link(victim, filepath.Join(jobDir, StagedDirName, TranscriptName))
		}
		return nil
	})
	t.Cleanup(func() { faults.Set(nil) })
	sess, err := s.Resolve(testKey, localJob(), jobDir)
	faults.Set(nil)
	if linked != 1 {
		t.Fatalf("the resolve passed %s %d times, want once", faults.StagedAfterUnlink, linked)
	}
	if got, err := os.ReadFile(victim); err != nil || !bytes.Equal(got, want) {
		t.Errorf("the victim holds %.60q… (%d bytes, %v), want %q", got, len(got), err, want)
	}
	if !errors.Is(err, unix.EEXIST) {
		t.Fatalf("resolve = resume %v %s, %v; want the create's EEXIST", sess.Resume, sess.Reason, err)
	}
}
