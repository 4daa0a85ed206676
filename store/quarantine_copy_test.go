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

// A quarantine that opened a hard-linked meta.db while a writer (a
// promotion, in another process) gave the file a copy of its own gets
// the old file's lock on a file no longer at the name: it locks the copy
// and moves the key dir aside, with the copy and the writer's commit. It
// failed "replaced while it was being locked", where the writer, before
// it copied, had committed in place and the quarantine gone on.
func TestQuarantineLocksAHardLinkedMetaDBsCopy(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "first")
	dir := filepath.Join(root, testKey)
	outside := filepath.Join(t.TempDir(), db.FileName)
	if err := os.Link(filepath.Join(dir, db.FileName), outside); err != nil {
		t.Fatal(err)
	}
	was, err := os.ReadFile(outside)
	if err != nil {
		t.Fatal(err)
	}
	var once atomic.Bool
	faults.Set(func(p faults.Point) error {
		if p != faults.QuarantineBeforeLock || !once.CompareAndSwap(false, true) {
			return nil
		}
		// The writer, between the quarantine's open and its lock: this
		// process's in-process lock is not the quarantine's to hold.
		kd, err := os.Open(dir)
		if err != nil {
			t.Error(err)
			return nil
		}
		defer kd.Close()
		d, err := db.OpenWriter(kd, filepath.Join(dir, db.FileName), db.Options{LockTimeout: s.opts.LockTimeout})
		if err != nil {
			t.Error(err)
			return nil
		}
		defer d.Close()
		if err := d.Update(func(tx *db.Tx) error { return tx.PutVenue("elsewhere") }); err != nil {
			t.Error(err)
		}
		return nil
	})
	defer faults.Set(nil)
	aside, err := s.Quarantine(testKey)
	faults.Set(nil)
	if !once.Load() {
		t.Fatal("the quarantine never reached quarantine/before-lock")
	}
	if err != nil {
		t.Fatalf("quarantine: %v", err)
	}
	kd, err := os.Open(filepath.Join(root, aside))
	if err != nil {
		t.Fatal(err)
	}
	defer kd.Close()
	d, sc, err := db.OpenSidecars(kd, db.Options{}, false)
	if err != nil {
		t.Fatal(err)
	}
	d.Close()
	if sc.Venue == nil || *sc.Venue != "elsewhere" {
		t.Errorf("the quarantine dir's meta.db has venue %v, want the writer's commit", sc.Venue)
	}
	if now, err := os.ReadFile(outside); err != nil || !bytes.Equal(now, was) {
		t.Errorf("the name outside the root changed (%v)", err)
	}
}

// A quarantine that opened meta.db while its holder removed it under the
// lock (migrate --to-legacy; the removal of a meta.db made for a lock
// alone) finds, once it has the lock, no meta.db at the name: the key has
// none now, and it is quarantined as a key without one (a meta.db made
// for the lock, moved with the dir and removed there). It failed
// "replaced while it was being locked".
func TestQuarantineOfAMetaDBRemovedUnderItsLock(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "first")
	dir := filepath.Join(root, testKey)
	var once atomic.Bool
	faults.Set(func(p faults.Point) error {
		if p == faults.QuarantineBeforeLock && once.CompareAndSwap(false, true) {
			if err := os.Remove(filepath.Join(dir, db.FileName)); err != nil {
				t.Error(err)
			}
		}
		return nil
	})
	defer faults.Set(nil)
	aside, err := s.Quarantine(testKey)
	faults.Set(nil)
	if !once.Load() {
		t.Fatal("the quarantine never reached quarantine/before-lock")
	}
	if err != nil {
		t.Fatalf("quarantine: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(root, aside, TranscriptName)); err != nil {
		t.Errorf("the quarantine dir has no transcript: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(root, aside, db.FileName)); !os.IsNotExist(err) {
		t.Errorf("the quarantine dir has a meta.db (%v): the lock's was not removed", err)
	}
	if _, err := os.Lstat(dir); !os.IsNotExist(err) {
		t.Errorf("the key dir is still at its name (%v)", err)
	}
}
