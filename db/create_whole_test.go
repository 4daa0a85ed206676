package db

import (
	"os"
	"testing"
	"time"
)

// The file create puts at meta.db's name is whole: its schema is current
// and meta/created set before the name exists, so that whoever locks it
// first (a reader, a check, another process's writer) finds a complete
// file, never bbolt's empty one waiting for the creator's open to migrate
// it.
func TestTheFileCreatePutsAtTheNameIsWhole(t *testing.T) {
	kd := newKeyDir(t)
	created := time.Unix(1_700_000_000, 0)
	var got Meta
	var readErr error
	testHookLocked = func() {
		b, err := os.ReadFile(kd.db)
		if err != nil {
			readErr = err
			return
		}
		m, err := InspectMeta(memPages(b), int64(len(b)))
		if err != nil {
			readErr = err
			return
		}
		snap, err := readSnapshot(b[:m.HighWater()], m)
		if err != nil {
			readErr = err
			return
		}
		got, readErr = readMeta(snap, SchemaVersion)
	}
	defer func() { testHookLocked = nil }()
	opts := testOpts
	opts.Now = func() time.Time { return created }
	d, err := OpenWriter(kd.dir, kd.db, opts)
	if err != nil {
		t.Fatal(err)
	}
	d.Close()
	if readErr != nil || got.Schema != SchemaVersion || got.Created != created.UnixNano() {
		t.Errorf("meta.db as its first lock found it: %+v, %v; want schema %d created %d", got, readErr, SchemaVersion, created.UnixNano())
	}
}
