package store

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sessdb/db"
	"sessdb/gates"
)

// A key's meta.db or transcript with a second name outside the root (a
// copy made with cp -al) is reported as a link that --repair leaves; its
// repair line said "look at it and remove it by hand", of the key's own
// meta.db or current.jsonl: followed, it removed the key's record or
// transcript, for a link sessdb never writes through (24d2ce0). The line
// now says to keep this name.
func TestCheckRepairTellsToKeepAHardLinkedKeyFile(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "first")
	backup := t.TempDir()
	for _, n := range []string{db.FileName, TranscriptName} {
		if err := os.Link(filepath.Join(root, testKey, n), filepath.Join(backup, n)); err != nil {
			t.Fatal(err)
		}
	}
	found, _ := chkRun(t, s, true)
	for _, n := range []string{db.FileName, TranscriptName} {
		f := chkFind(found, testKey+"/"+n, KindLink)
		if f == nil {
			t.Fatalf("%s: no link finding in %+v", n, found)
		}
		if strings.Contains(f.Repair, "remove it by hand") || !strings.Contains(f.Repair, "keep it") {
			t.Errorf("%s: the repair line tells the operator to remove the key's own file: %q", n, f.Repair)
		}
	}
}
