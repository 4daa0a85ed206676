package store

import (
	"os"
	"path/filepath"
	"testing"

	"sessdb/gates"
)

// writeTicket goes through a temp file and a rename: when the rename
// cannot land (here a non-empty directory holds the ticket's name), the
// write fails and its temp goes with it, so a failed resolve leaves no
// stray file in the job dir for every later resolve to step around.
func TestFailedTicketWriteLeavesNoTemp(t *testing.T) {
	s, _, _ := newTestStore(t, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "a")
	sess, _ := mustResolve(t, s, testKey, localJob())
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, TicketName, "x"), 0o700); err != nil {
		t.Fatal(err)
	}
	jd, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer jd.Close()
	if err := writeTicket(jd, sess); err == nil {
		t.Fatal("a ticket renamed over a non-empty directory: no error")
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 || ents[0].Name() != TicketName {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("job dir after the failed write: %v; want only %s", names, TicketName)
	}
}
