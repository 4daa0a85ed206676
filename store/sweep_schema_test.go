package store

import (
	"os"
	"path/filepath"
	"testing"

	"sessdb/db"
	"sessdb/gates"
)

// TestSweepWaitingOnAQuarantineOfAnOlderSchemaKey: reap's sweep of stale
// temps that waited for the lock of a key moved aside finds nothing to
// sweep, and says no error, whatever the open met there: here a meta.db of
// an older schema, whose migration the open refuses to commit in the dir
// moved aside (db.Options.BeforeWrite), as TestSweepWaitingOnAQuarantineLeavesIt
// says for a current one.
func TestSweepWaitingOnAQuarantineOfAnOlderSchemaKey(t *testing.T) {
	s, root, clock := newTestStore(t, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "one")
	chkWriteRaw(t, root, testKey, "meta", "schema", []byte{1}) // schema 1, in msgpack
	stale := filepath.Join(root, testKey, tmpPrefix+"0123456789abcdef")
	must(t, os.WriteFile(stale, []byte("debris"), 0o600))
	old := clock.now.Add(-2 * StaleTempAge)
	must(t, os.Chtimes(stale, old, old))
	lockKd := openDirT(t, filepath.Join(root, testKey))
	lock, err := db.OpenReader(lockKd, chkDB(root, testKey), db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	kd := openDirT(t, filepath.Join(root, testKey))
	type swept struct {
		names []string
		err   error
	}
	got := make(chan swept, 1)
	go func() {
		names, err := s.sweepStaleTemps(kd, testKey, clock.now.Add(-StaleTempAge), false)
		got <- swept{names, err}
	}()
	waitForKeyLock(t)
	aside := filepath.Join(root, QuarantinePrefix+testKey+"-20261101T120000Z")
	must(t, os.Rename(filepath.Join(root, testKey), aside))
	before := entriesOf(t, aside)
	lock.Close()
	if r := <-got; r.err != nil || len(r.names) != 0 {
		t.Errorf("the sweep of a key moved aside while it waited: %v, %v; want nothing swept, no error", r.names, r.err)
	}
	if after := entriesOf(t, aside); after != before {
		t.Errorf("the quarantine dir changed:\n%s\nwas\n%s", after, before)
	}
}
