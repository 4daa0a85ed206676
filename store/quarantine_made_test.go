package store

import (
	"bytes"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"sessdb/db"
	"sessdb/gates"
	"sessdb/internal/faults"
)

// A quarantine of a key it found without a meta.db takes away, in the dir
// moved aside, only the meta.db its own open made for the lock. One that
// another process's promotion made and committed into between the
// quarantine's look and its open (the open then waits for, and locks, that
// file) holds the key's record: it is moved with the dir, as the rest.
func TestQuarantineKeepsAMetaDBARivalMadeBeforeItsOpen(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	writeLegacy(t, root, testKey, map[string]string{
		TranscriptName: string(transcriptBytes(quarantineNow, "legacy")),
		"pi-version":   testPi,
	})
	// The rival's meta.db: a promotion's, with its record, made elsewhere
	// and put at the key's meta.db as that promotion's link would.
	other := Key("github", "acme/widget", "pi/issue-rival")
	runJob(t, s, other, localJob(), PromoteRequest{}, "rival")
	rival := filepath.Join(root, other, db.FileName)
	want, err := os.ReadFile(rival)
	if err != nil {
		t.Fatal(err)
	}
	var once atomic.Bool
	faults.Set(func(p faults.Point) error {
		if p == faults.DBOpenBeforeMeta && once.CompareAndSwap(false, true) {
			if err := os.Rename(rival, filepath.Join(root, testKey, db.FileName)); err != nil {
				t.Error(err)
			}
		}
		return nil
	})
	defer faults.Set(nil)
	aside, err := s.Quarantine(testKey)
	faults.Set(nil)
	if err != nil {
		t.Fatal(err)
	}
	if !once.Load() {
		t.Fatal("the quarantine's open never reached db-open/before-meta")
	}
	got, err := os.ReadFile(filepath.Join(root, aside, db.FileName))
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("the quarantine dir's meta.db: %d bytes, %v; want the rival's %d bytes with its record", len(got), err, len(want))
	}
}
