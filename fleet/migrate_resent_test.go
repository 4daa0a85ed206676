package fleet

import (
	"os"
	"path/filepath"
	"testing"

	"google.golang.org/grpc/codes"

	"sessdb/internal/etcdtest"
	"sessdb/internal/faults"
	"sessdb/migrate"
	"sessdb/store"
)

// A migration's create that landed, its answer a context error etcd's
// client then sent again itself, meets its own record: the key is
// migrated, and the file the record names stays. Before, the create took
// the record for another writer's, removed its file and reported the key
// already moved (the record, the same generation, named a file gone for
// good: the fleet resolved the key transcript-replaced, and the operator
// read the key as moved).
func TestAMigrationCreateTheClientSentAgainKeepsItsFile(t *testing.T) {
	for _, code := range []codes.Code{codes.DeadlineExceeded, codes.Canceled} {
		t.Run(code.String(), func(t *testing.T) {
			c := etcdtest.Start(t, etcdtest.Options{Members: 1, InProcess: true})
			f := newFixture(t, c)
			key := store.Key("github", "moved", "resent-"+code.String())
			root := promotedOnHost(t, key, "host")
			t.Cleanup(func() { c.LoseNextAs(resentTxn, 0, 0, code) })
			faults.Set(func(p faults.Point) error {
				if p == faults.ToEtcdWritten {
					c.LoseNextAs(resentTxn, 0, 1, code)
				}
				return nil
			})
			got, _ := runMigration(t, true, root, f.b, MigrateOptions{})
			faults.Set(nil)
			file := f.recordFile(key)
			if _, err := os.Lstat(filepath.Join(f.dir, file)); err != nil {
				t.Fatalf("the key = %+v; the record names %s: %v", got[key], file, err)
			}
			if r := got[key]; r.Action != migrate.Migrated {
				t.Errorf("the key = %s (%s), want migrated", r.Action, r.Cause)
			}
			f.holds(key, "host", 1)
		})
	}
}

// So is a key with no transcript to move (its key dir's is gone: the
// fleet gets its stamps, absent), whose record names no file to tell it
// by: a create the client sent again, meeting a record with no file, is
// taken for its own, as after a try unanswered here. It was reported
// already moved by this first run.
func TestAMigrationCreateWithNoFileTheClientSentAgainIsMigrated(t *testing.T) {
	c := etcdtest.Start(t, etcdtest.Options{Members: 1, InProcess: true})
	f := newFixture(t, c)
	key := store.Key("github", "moved", "resent-no-file")
	root := promotedOnHost(t, key, "host")
	if err := os.Remove(filepath.Join(root, key, store.TranscriptName)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.LoseNextAs(resentTxn, 0, 0, codes.DeadlineExceeded) })
	// The key's read is the migration's first Txn, its create the second.
	c.LoseNextAs(resentTxn, 1, 1, codes.DeadlineExceeded)
	got, _ := runMigration(t, true, root, f.b, MigrateOptions{})
	if r := got[key]; r.Action != migrate.Migrated {
		t.Errorf("the key = %s (%s), want migrated", r.Action, r.Cause)
	}
	if st, err := f.b.meta.GetRecord(t.Context(), key); err != nil || st.Rev == 0 || st.Record.Transcript != nil {
		t.Fatalf("the key's record: %+v, %v; want stamps and no transcript", st, err)
	}
}
