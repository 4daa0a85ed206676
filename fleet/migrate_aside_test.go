package fleet

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"sessdb/db"
	"sessdb/internal/etcdtest"
	"sessdb/internal/fsat"
	"sessdb/migrate"
	"sessdb/store"
)

// TestQuarantineWhileAFleetMigrationWaits: check --quarantine moves a key
// dir aside, whole, under the key's lock, and promises that nothing in
// the dir moved aside changes. A fleet migration that opened the key dir
// before the move and waits for that lock must find the dir gone from
// the key's name once it has the lock, and leave it: no entry of the
// quarantine dir changed, nothing created in etcd. To etcd, the source
// moved aside, the key is skipped, vanished; from etcd, the key is still
// in the source and not in the root: failed (not complete, exit 1), and a
// re-run writes it into a key dir of its own. To etcd,
// the key is one promoted on the host; from etcd, one the fleet promoted
// since (it would be brought forward), and an empty key dir whose meta.db
// the quarantine made for its lock and removed (the migration's open
// makes another there, which it must take away); and a meta.db of an
// older schema, which the migration's open must not migrate there (it
// did, a commit in the dir moved aside). The quarantine's steps
// are Store.Quarantine's, done here by hand so that the migration is
// known to wait.
func TestQuarantineWhileAFleetMigrationWaits(t *testing.T) {
	c := etcdtest.Start1(t)
	for _, tc := range []struct {
		name  string
		to    bool
		empty bool // the key dir holds nothing: the quarantine made meta.db
		older bool // meta.db is of schema 1: the open's migration must not be committed there
	}{
		{"to etcd", true, false, false},
		{"from etcd", false, false, false},
		{"from etcd, an empty key dir", false, true, false},
		{"to etcd, an older schema", true, false, true},
		{"from etcd, an older schema", false, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, c)
			root := t.TempDir()
			key := store.Key("github", "aside", randHex(4))
			if tc.empty {
				f.run(key, "fleet 1")
				if err := os.Mkdir(filepath.Join(root, key), 0o700); err != nil {
					t.Fatal(err)
				}
			} else {
				newHostBuilder(t, root).mustPromote(key, migJob, "a1", store.PromoteRequest{})
				if !tc.to {
					runMigration(t, true, root, f.b, migOpts())
					f.now = migNow
					f.run(key, "fleet 2")
				}
			}
			dir := filepath.Join(root, key)
			if tc.older {
				bdb, err := bolt.Open(filepath.Join(dir, db.FileName), 0o600, nil)
				if err != nil {
					t.Fatal(err)
				}
				err = bdb.Update(func(tx *bolt.Tx) error { return tx.Bucket([]byte("meta")).Put([]byte("schema"), []byte{0x01}) })
				if cerr := bdb.Close(); err == nil {
					err = cerr
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			kd, err := fsat.OpenDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer kd.Close()
			open := db.OpenWriter
			if tc.older {
				open = db.OpenReader // a writer would migrate the schema itself
			}
			lock, err := open(kd, filepath.Join(dir, db.FileName), db.Options{})
			if err != nil {
				t.Fatal(err)
			}
			etcdBefore := etcdOf(t, c, f.prefix)
			filesBefore := f.files(key)
			type result struct {
				got map[string]MigrateReport
				sum MigrateSummary
			}
			done := make(chan result, 1)
			go func() {
				// Not runMigration, which may call t.Fatal: only the
				// test's goroutine may.
				got := map[string]MigrateReport{}
				visit := func(r MigrateReport) error { got[r.Key] = r; return nil }
				var sum MigrateSummary
				var err error
				if tc.to {
					sum, err = ToEtcd(t.Context(), root, f.b, migOpts(), visit)
				} else {
					sum, err = FromEtcd(t.Context(), f.b, root, migOpts(), visit)
				}
				if err != nil {
					t.Errorf("migrate: %v", err)
				}
				done <- result{got, sum}
			}()
			// The migration waits for the lock (the in-process one: the
			// test's open is this process's): a fixed sleep was not always
			// enough under load, and the quarantine then came before the
			// migration opened the key dir.
			waitForKeyLock(t)
			aside := filepath.Join(root, store.QuarantinePrefix+key+"-20261101T120000Z")
			if err := os.Rename(dir, aside); err != nil {
				t.Fatal(err)
			}
			if tc.empty {
				if err := os.Remove(filepath.Join(aside, db.FileName)); err != nil {
					t.Fatal(err)
				}
			}
			tree := treeOf(t, aside)
			lock.Close()
			res := <-done
			if r := res.got[key]; tc.to && (r.Action != migrate.Skipped || r.Cause != "vanished") {
				t.Errorf("the key moved aside: %s (%s), want skip, vanished", r.Action, r.Cause)
			}
			// From etcd, the key is still in the source and not in the
			// root: the run is not complete (exit 1), and a re-run
			// writes it into a key dir of its own.
			if r := res.got[key]; !tc.to && (r.Action != migrate.Failed || res.sum.Complete()) {
				t.Errorf("the key's destination moved aside: %s (%s), complete %v; want failed, not complete", r.Action, r.Cause, res.sum.Complete())
			}
			after := treeOf(t, aside)
			// The dir's own mtime is not kept: the open that waited may
			// have made a meta.db for the lock, removed again as the
			// quarantine removes its own.
			delete(tree, ".")
			delete(after, ".")
			if d := diffMaps(tree, after); d != "" {
				t.Errorf("the quarantine dir changed:\n%s", d)
			}
			if d := diffMaps(etcdBefore, etcdOf(t, c, f.prefix)); d != "" {
				t.Errorf("etcd changed:\n%s", d)
			}
			if files := f.files(key); len(files) != len(filesBefore) {
				t.Errorf("the key's transcripts are %v, were %v", files, filesBefore)
			}
			if !tc.to {
				if got, sum := runMigration(t, false, root, f.b, migOpts()); got[key].Action != migrate.Migrated || !sum.Complete() {
					t.Errorf("the re-run: %s (%s), complete %v; want migrate, complete", got[key].Action, got[key].Cause, sum.Complete())
				}
			}
		})
	}
}

// waitForKeyLock waits until some goroutine waits for a key's in-process
// lock in package db.
func waitForKeyLock(t *testing.T) {
	t.Helper()
	buf := make([]byte, 1<<20)
	for deadline := time.Now().Add(10 * time.Second); !bytes.Contains(buf[:runtime.Stack(buf, true)], []byte("sessdb/db.lockKey")); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the migration never waited for the key's lock")
		}
	}
}
