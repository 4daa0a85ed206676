package store

import (
	"bytes"
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

// TestSweepLeavesAnOlderSchemaAsItIs: reap and check --repair remove a
// stray temp under the key's exclusive lock, a writer's open, which
// upgraded a schema 1 meta.db to schema 2 although they write nothing in
// it. A sessdb of schema 1 (8f9973c and before) then refuses the key: its
// resolve cold-starts as meta-unreadable and its promote fails. Measured
// with real binaries: a root 8f9973c's promotions made, a stray temp in a
// key, then this binary's reap (or check --repair): 8f9973c's resolve of
// that key meta-unreadable. During a rolling upgrade the old workers share
// the root with the new binary's cron reap, and after a rollback to schema
// 1 a reap left behind cuts the rolled-back workers off key by key. The
// schema 1 file is a promotion's with its schema set back to 1, as the
// other schema tests here make one (the records read the same).
func TestSweepLeavesAnOlderSchemaAsItIs(t *testing.T) {
	for _, via := range []string{"reap", "check --repair"} {
		t.Run(via, func(t *testing.T) {
			s, root, clock := newTestStore(t, gates.Bounds{})
			runJob(t, s, testKey, localJob(), PromoteRequest{}, "one")
			chkWriteRaw(t, root, testKey, "meta", "schema", []byte{1}) // schema 1, in msgpack
			stale := filepath.Join(root, testKey, tmpPrefix+"0123456789abcdef")
			must(t, os.WriteFile(stale, []byte("debris"), 0o600))
			old := clock.now.Add(-2 * StaleTempAge)
			must(t, os.Chtimes(stale, old, old))
			before, err := os.ReadFile(chkDB(root, testKey))
			must(t, err)
			if via == "reap" {
				if _, err := s.Reap(false); err != nil {
					t.Fatal(err)
				}
			} else {
				chkRun(t, s, true)
			}
			if _, err := os.Lstat(stale); !os.IsNotExist(err) {
				t.Fatalf("the stray temp is still there (%v)", err)
			}
			if after, _ := os.ReadFile(chkDB(root, testKey)); !bytes.Equal(before, after) {
				t.Fatal("the sweep rewrote the key's meta.db: an older sessdb can no longer read it")
			}
		})
	}
}
