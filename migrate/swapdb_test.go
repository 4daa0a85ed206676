package migrate

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"sessdb/db"
	"sessdb/internal/fsat"
	"sessdb/store"
)

// TestQuarantineWhileAMigrationWaits with a meta.db of an older schema
// (1): the migration that waited for the quarantine's lock must leave the
// dir moved aside as it was, meta.db byte for byte, not migrate its schema
// there (the open's own commit, before the migration saw the dir moved).
func TestQuarantineOfAnOlderSchemaWhileAMigrationWaits(t *testing.T) {
	for _, back := range []bool{false, true} {
		root, key := oneKey(t)
		if back {
			migrate(t, root, false, testOpts())
		}
		dir := filepath.Join(root, key)
		if _, hadDB := dbValues(t, dir); !hadDB {
			// The lock file an older sessdb's killed promotion left.
			kd, err := fsat.OpenDir(dir)
			must(t, err)
			d, err := db.OpenWriter(kd, filepath.Join(dir, db.FileName), db.Options{})
			must(t, err)
			must(t, d.Close())
			kd.Close()
		}
		bdb, err := bolt.Open(filepath.Join(dir, db.FileName), 0o600, nil)
		must(t, err)
		must(t, bdb.Update(func(tx *bolt.Tx) error { return tx.Bucket([]byte("meta")).Put([]byte("schema"), []byte{0x01}) }))
		must(t, bdb.Close())

		kd, err := fsat.OpenDir(dir)
		must(t, err)
		lock, err := db.OpenReader(kd, filepath.Join(dir, db.FileName), db.Options{})
		must(t, err)
		done := make(chan map[string]Report, 1)
		go func() {
			got := map[string]Report{}
			if _, err := run(context.Background(), root, map[bool]conversion{false: toDB, true: toLegacy}[back], testOpts(), func(r Report) error { got[r.Key] = r; return nil }); err != nil {
				t.Errorf("migrate: %v", err)
			}
			done <- got
		}()
		waitInStack(t, "sessdb/db.lockKey") // the migration waits for the lock
		aside := filepath.Join(root, store.QuarantinePrefix+key+"-20261101T120000Z")
		must(t, os.Rename(dir, aside))
		tree := treeState(t, aside, true, true)
		must(t, lock.Close())
		got := <-done
		kd.Close()
		if r := got[key]; r.Action != Skipped || r.Cause != vanishedCause {
			t.Errorf("%s: %+v, want skip, vanished", direction(back), r)
		}
		if d := diffStates(tree, treeState(t, aside, true, true)); d != "" {
			t.Errorf("%s: the quarantine dir changed:\n%s", direction(back), d)
		}
	}
}

// waitInStack waits until some goroutine's stack shows fn.
func waitInStack(t *testing.T, fn string) {
	t.Helper()
	buf := make([]byte, 1<<20)
	for deadline := time.Now().Add(5 * time.Second); !bytes.Contains(buf[:runtime.Stack(buf, true)], []byte(fn)); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no goroutine reached %s", fn)
		}
	}
}
