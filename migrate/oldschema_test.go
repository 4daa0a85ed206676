package migrate

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
	"golang.org/x/sys/unix"

	"sessdb/db"
	"sessdb/internal/faults"
)

// TestRerunLeavesAnOlderSchemaAsItIs: a key already in meta.db has nothing
// to convert, and a re-run "changes nothing" (docs/migration.md); but the
// writer's open the plan took upgraded a schema 1 meta.db to schema 2,
// which the sessdb that wrote it refuses (meta-unreadable, promote-failed).
// An operator who runs the new binary's migrate during a rolling upgrade
// (or to check a root is done) must not make every key unreadable to the
// workers not yet upgraded, or the rollback to them. Measured with sessdb
// 8f9973c (schema 1): a root its promotions made, then this migrate
// ("already"), then 8f9973c's resolve: meta-unreadable. The schema 1 file
// here is the migration's own with its schema set back to 1, as an older
// sessdb's reads (the sidecars are the same in both schemas).
func TestRerunLeavesAnOlderSchemaAsItIs(t *testing.T) {
	root, key := oneKey(t)
	migrate(t, root, false, testOpts())
	file := filepath.Join(root, key, db.FileName)
	bdb, err := bolt.Open(file, 0o600, nil)
	must(t, err)
	must(t, bdb.Update(func(tx *bolt.Tx) error { return tx.Bucket([]byte("meta")).Put([]byte("schema"), []byte{0x01}) }))
	must(t, bdb.Close())
	before, err := os.ReadFile(file)
	must(t, err)

	got, _ := migrate(t, root, false, testOpts())
	if r := got[key]; r.Action != Already {
		t.Fatalf("re-run: %+v, want already", r)
	}
	after, err := os.ReadFile(file)
	must(t, err)
	if !bytes.Equal(before, after) {
		bdb, err := bolt.Open(file, 0o600, &bolt.Options{ReadOnly: true})
		must(t, err)
		defer bdb.Close()
		var schema []byte
		must(t, bdb.View(func(tx *bolt.Tx) error {
			schema = bytes.Clone(tx.Bucket([]byte("meta")).Get([]byte("schema")))
			return nil
		}))
		t.Fatalf("a re-run over a finished key rewrote its meta.db (schema now %x, was 01)", schema)
	}
}

// TestRerunTakesNoWritersOpen: a re-run over a finished key is planned
// under the shared lock, as a dry run is, not through a writer's open,
// which changes the key even when nothing is written: it gives a meta.db
// with a second name (a copy of the root made with cp -al) a file of its
// own, so that the other name no longer follows the key. A re-run
// "changes nothing" (docs/migration.md). TestRerunLeavesAnOlderSchemaAsItIs
// passes without the shared-lock plan since the writer's open stopped
// migrating schema 1; this one does not.
func TestRerunTakesNoWritersOpen(t *testing.T) {
	root, key := oneKey(t)
	migrate(t, root, false, testOpts())
	file := filepath.Join(root, key, db.FileName)
	other := filepath.Join(t.TempDir(), "backup-meta.db")
	must(t, os.Link(file, other))
	before, err := os.Stat(file)
	must(t, err)

	got, _ := migrate(t, root, false, testOpts())
	if r := got[key]; r.Action != Already {
		t.Fatalf("re-run: %+v, want already", r)
	}
	after, err := os.Stat(file)
	must(t, err)
	if !os.SameFile(before, after) {
		t.Fatal("a re-run over a finished key replaced its meta.db (a writer's open copied the hard-linked file)")
	}
}

// A key whose lock another process holds (a promotion, a reap) is locked
// once meta.db's lock is not had within LockTimeout (docs/migration.md:
// "not had within 10 s"). The shared-lock plan of a finished key waited
// that long, and then the writer's open waited as long again: a re-run
// over a busy root took twice the timeout per busy key (measured with the
// CLI: 20.0 s for one key, the default 10 s). The lock is tried once.
func TestRerunOverALockedKeyWaitsOnce(t *testing.T) {
	root, key := oneKey(t)
	migrate(t, root, false, testOpts())
	held, err := os.Open(filepath.Join(root, key, db.FileName))
	must(t, err)
	defer held.Close()
	must(t, unix.Flock(int(held.Fd()), unix.LOCK_EX))

	waits := 0
	t.Cleanup(func() { faults.Set(nil) })
	faults.Set(func(p faults.Point) error {
		if p == faults.DBOpenBeforeLock {
			waits++
		}
		return nil
	})
	opts := testOpts()
	opts.LockTimeout = 50 * time.Millisecond
	got, _ := migrate(t, root, false, opts)
	faults.Set(nil)
	if r := got[key]; r.Action != Locked {
		t.Fatalf("a key whose lock is held: %+v, want locked", r)
	}
	if waits != 1 {
		t.Fatalf("the run waited for the key's lock %d times, want once", waits)
	}
}
