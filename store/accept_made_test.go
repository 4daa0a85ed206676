package store

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"sessdb/db"
	"sessdb/gates"
	"sessdb/internal/faults"
)

// An accept of a key it found without a meta.db (one moved aside by a
// repair) that refuses once it has the lock takes away only the meta.db
// its own open made for the lock. One another process's promotion made and
// committed into between the accept's look and its open, which the open
// then waited for and locked, holds the key's record: here the key dir
// was then quarantined too, and the quarantine dir must keep it.
func TestAcceptRefusedKeepsAMetaDBARivalMadeBeforeItsOpen(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	writeLegacy(t, root, testKey, map[string]string{
		TranscriptName:                string(transcriptBytes(quarantineNow, "kept")),
		AsidePrefix + "20261101T0000": "a damaged meta.db moved aside",
	})
	other := Key("github", "acme/widget", "pi/issue-rival")
	runJob(t, s, other, localJob(), PromoteRequest{}, "rival")
	rival := filepath.Join(root, other, db.FileName)
	want, err := os.ReadFile(rival)
	if err != nil {
		t.Fatal(err)
	}
	quarantined := filepath.Join(root, QuarantinePrefix+testKey+"-20261101T120000Z")
	var once atomic.Bool
	faults.Set(func(p faults.Point) error {
		if p == faults.DBOpenBeforeMeta && once.CompareAndSwap(false, true) {
			// The rival's promotion lands, then a quarantine moves the
			// dir aside, each under the lock this open then waits for.
			must(t, os.Rename(rival, filepath.Join(root, testKey, db.FileName)))
			must(t, os.Rename(filepath.Join(root, testKey), quarantined))
		}
		return nil
	})
	defer faults.Set(nil)
	_, err = s.Accept(testKey)
	faults.Set(nil)
	if !once.Load() {
		t.Fatal("the accept's open never reached db-open/before-meta")
	}
	if !errors.Is(err, ErrNotAccepted) {
		t.Fatalf("accept of a dir moved aside = %v; want ErrNotAccepted", err)
	}
	got, err := os.ReadFile(filepath.Join(quarantined, db.FileName))
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("the quarantine dir's meta.db: %d bytes, %v; want the rival's %d bytes with its record", len(got), err, len(want))
	}
}
