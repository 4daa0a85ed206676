package store

import (
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sessdb/db"
	"sessdb/gates"
	"sessdb/internal/faults"
	"sessdb/internal/fsat"
)

// Nothing locks a legacy key, and a migration to meta.db commits meta.db
// first and then removes the legacy files, the context file before the
// venue. A resolve that found no meta.db and then read the legacy files
// while the migration removed them read a half-removed key: the context
// missing (no measurement, past the context bound) with the venue still
// there to pass the legacy re-check. It must judge the key by the meta.db
// that appeared instead, as a resolve after the migration does.
func TestLegacyKeyMigratedUnderAResolveIsJudgedByItsMetaDB(t *testing.T) {
	s, root, clock := newTestStore(t, gates.Bounds{MaxContextPct: 80})
	body := transcriptBytes(clock.now, "legacy turn")
	writeLegacy(t, root, testKey, map[string]string{
		TranscriptName: string(body),
		"pi-version":   testPi, "venue": "local", "context": "190000 200000",
	})
	dir := filepath.Join(root, testKey)
	migrated := false
	faults.Set(func(p faults.Point) error {
		if p != faults.ResolveAfterMetaOpen || migrated {
			return nil
		}
		migrated = true
		// The migration, up to its removal of the context file: meta.db
		// committed with the key's values, the other legacy files still
		// there.
		kd, err := fsat.OpenDir(dir)
		if err != nil {
			return err
		}
		defer kd.Close()
		d, err := db.OpenWriter(kd, db.FileName, db.Options{})
		if err != nil {
			return err
		}
		defer d.Close()
		venue, pi := "local", testPi
		if err := d.Update(func(tx *db.Tx) error {
			return tx.PutSidecars(db.Sidecars{
				Transcript: &db.Transcript{Gen: 1, Size: int64(len(body)), CRC32C: uint64(crc32.Checksum(body, crc32.MakeTable(crc32.Castagnoli))), PromotedAt: clock.now.UnixNano()},
				PiVersion:  &pi, Venue: &venue,
				Context: &db.Context{Tokens: 190000, Window: 200000},
			})
		}); err != nil {
			return err
		}
		return os.Remove(filepath.Join(dir, "context"))
	})
	t.Cleanup(func() { faults.Set(nil) })
	fds := openFDs(t)
	sess, _ := mustResolve(t, s, testKey, localJob())
	if !migrated {
		t.Fatal("the resolve never reached the point after meta.db's open")
	}
	want(t, sess, false, gates.ContextTooFull)
	// The legacy read it let go of holds no descriptor.
	if n := openFDs(t); n != fds {
		t.Errorf("%d descriptors open after the resolve, %d before", n, fds)
	}
}

// A key that a rollback and a migration move between the layouts under
// every read is read three times, then the resolve fails naming it:
// never a loop.
func TestAKeyMovingUnderEveryReadFailsAfterThreeReads(t *testing.T) {
	s, root, clock := newTestStore(t, gates.Bounds{})
	writeLegacy(t, root, testKey, map[string]string{TranscriptName: string(transcriptBytes(clock.now, "legacy turn")), "pi-version": testPi})
	meta := filepath.Join(root, testKey, db.FileName)
	reads := 0
	faults.Set(func(p faults.Point) error {
		switch p {
		case faults.ResolveAfterKeyDirOpen: // rolled back: no meta.db
			reads++
			if err := os.Remove(meta); err != nil && !os.IsNotExist(err) {
				return err
			}
		case faults.ResolveAfterMetaOpen: // migrated again
			return os.WriteFile(meta, nil, 0o600)
		}
		return nil
	})
	t.Cleanup(func() { faults.Set(nil) })
	_, err := s.Resolve(testKey, localJob(), t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "under 3 reads") || reads != 3 {
		t.Fatalf("resolve of a key moving under every read: %v after %d reads; want it failed after 3", err, reads)
	}
}
