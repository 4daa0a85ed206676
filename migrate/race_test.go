package migrate

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"sessdb/db"
	"sessdb/gates"
	"sessdb/internal/faults"
	"sessdb/internal/fsat"
	"sessdb/store"
)

// The tests here stop a migration between two of its steps (its fault
// points) while another store handle, as another process would, resolves,
// promotes with a ticket, or repairs the same key. The promises: the
// migration holds the key's lock for its steps, so the other actor waits;
// no promotion acknowledged meanwhile is lost or rolled back; a verdict
// changes only where a promotion moved the key on.

// oneKey lays out a root with the corpus's plain key alone: the fault
// points do not say which key reached them.
func oneKey(t *testing.T) (string, string) {
	root := filepath.Join(t.TempDir(), "sessions")
	must(t, osMkdir(root))
	return root, keyNamed(buildCorpus(t, root, "plain"), "plain")
}

// raceJob resolves key on a fresh store handle and stages one more turn in
// the job dir, as a run of pi would: what a Promote then takes.
func raceJob(t *testing.T, root, key string) (*store.Store, store.Session, int64) {
	t.Helper()
	st, err := store.New(root, store.Options{Now: func() time.Time { return testNow }, LockTimeout: 5 * time.Second})
	must(t, err)
	jobDir := t.TempDir()
	sess, err := st.Resolve(key, store.Job{PiVersion: testPi, Venue: "local"}, jobDir)
	must(t, err)
	if !sess.Resume {
		t.Fatalf("resolve before the migration: %+v", sess)
	}
	p := filepath.Join(jobDir, "session", "current.jsonl")
	f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	must(t, err)
	_, err = f.WriteString(`{"type":"message","id":"00000002","parentId":"00000001","timestamp":"2026-11-01T11:30:00.000Z","message":{"role":"assistant","content":"hi"}}` + "\n")
	must(t, err)
	must(t, f.Close())
	fi, err := os.Stat(p)
	must(t, err)
	return st, sess, fi.Size()
}

// promoteAt arms point to start st.Promote of sess the first time the
// migration reaches it, and checks that the promotion waits: the migration
// holds the key's lock there. The result comes on the channel.
func promoteAt(t *testing.T, point faults.Point, st *store.Store, sess store.Session) <-chan store.PromoteResult {
	t.Helper()
	done := make(chan store.PromoteResult, 1)
	fired := false
	t.Cleanup(func() { faults.Set(nil) })
	faults.Set(migrateOnly(func(p faults.Point) error {
		if p != point || fired {
			return nil
		}
		fired = true
		go func() {
			res, err := st.Promote(sess, store.PromoteRequest{PiVersion: testPi})
			if err != nil {
				t.Errorf("promote: %v", err)
			}
			done <- res
		}()
		if res, ok := waitingForTheLock(t, done); !ok {
			t.Errorf("the promotion did not wait for the migration's lock: %+v", res)
			done <- res
		}
		return nil
	}))
	return done
}

// waitingForTheLock returns once a goroutine waits for a key's lock (the
// other actor, the migration holding it), reporting true, or with what
// came on done first and false: the actor did not wait. It looked for 20
// ms at done, which told nothing on a loaded machine, where the actor may
// not even have reached the lock by then. The deadline only bounds a hang.
func waitingForTheLock[T any](t *testing.T, done <-chan T) (T, bool) {
	t.Helper()
	buf := make([]byte, 1<<20)
	for end := time.Now().Add(20 * time.Second); ; time.Sleep(time.Millisecond) {
		select {
		case v := <-done:
			return v, false
		default:
		}
		stacks := buf[:runtime.Stack(buf, true)]
		if bytes.Contains(stacks, []byte("sessdb/db.lockKey")) || bytes.Contains(stacks, []byte("sessdb/db.flockUntil")) {
			var zero T
			return zero, true
		}
		if time.Now().After(end) {
			// Not Fatal: this runs in the migration's goroutine.
			t.Error("nothing reached the key's lock")
			var zero T
			return zero, true
		}
	}
}

// TestPromotionWaitsForToDB: a job resolved on the legacy layout promotes
// while its key is being migrated (the migration holds the lock, nothing
// committed yet). The promotion lands after the commit, onto the values the
// migration recorded, and is the key's afterwards: its ticket's base (the
// legacy file in place) is the migrated key's too, and the chain the
// migration carried (1) is the one it counts on from.
func TestPromotionWaitsForToDB(t *testing.T) {
	root, key := oneKey(t)
	st, sess, size := raceJob(t, root, key)
	done := promoteAt(t, faults.ToDBLocked, st, sess)
	got, _ := migrate(t, root, false, testOpts())
	faults.Set(nil)
	res := <-done
	if r := got[key]; r.Action != Migrated {
		t.Fatalf("migrate: %+v", r)
	}
	if !res.Promoted || res.Gen != 2 {
		t.Fatalf("the promotion after the migration: %+v, want promoted as gen 2", res)
	}
	sc, ok := dbValues(t, filepath.Join(root, key))
	if !ok || sc.Transcript == nil || sc.Transcript.Gen != 2 || sc.Transcript.Size != size || sc.ResumeChain == nil || *sc.ResumeChain != 2 {
		t.Fatalf("meta.db after both: %s", fmtSidecars(sc))
	}
	again, err := st.Resolve(key, store.Job{PiVersion: testPi, Venue: "local"}, t.TempDir())
	must(t, err)
	if !again.Resume || again.Bytes != size {
		t.Errorf("resolve after both: %+v, want the promoted %d bytes", again, size)
	}
}

// TestPromotionDuringToLegacy: a job resolved on meta.db promotes while
// the key is rolled back (the legacy files written, meta.db not yet
// removed). The promotion waits for the lock; once the rollback removed
// meta.db, the key holds no record, so the ticket's base is gone and the
// promotion is refused (superseded), never acknowledged and then lost;
// the key's transcript and verdict are as the rollback left them.
func TestPromotionDuringToLegacy(t *testing.T) {
	root, key := oneKey(t)
	migrate(t, root, false, testOpts())
	st, sess, _ := raceJob(t, root, key)
	transcript, err := os.ReadFile(filepath.Join(root, key, "current.jsonl"))
	must(t, err)
	done := promoteAt(t, faults.ToLegacyTemps, st, sess)
	got, _ := migrate(t, root, true, testOpts())
	faults.Set(nil)
	res := <-done
	if r := got[key]; r.Action != Migrated {
		t.Fatalf("rollback: %+v", r)
	}
	if res.Promoted || res.Reason != gates.Superseded {
		t.Fatalf("the promotion after the rollback: %+v, want superseded", res)
	}
	now, err := os.ReadFile(filepath.Join(root, key, "current.jsonl"))
	must(t, err)
	if string(now) != string(transcript) {
		t.Fatal("the transcript changed under a refused promotion")
	}
	again, err := st.Resolve(key, store.Job{PiVersion: testPi, Venue: "local"}, t.TempDir())
	must(t, err)
	if !again.Resume || again.Bytes != int64(len(transcript)) {
		t.Errorf("resolve after both: %+v", again)
	}
}

// TestRepairDuringToDB: check --repair on another handle while a key is
// being migrated (its meta.db made for the lock, empty, nothing
// committed). The repair waits for the key's lock and finds the migrated
// key; it moves nothing aside, and the key's record is the migration's.
func TestRepairDuringToDB(t *testing.T) {
	root, key := oneKey(t)
	st, err := store.New(root, store.Options{Now: func() time.Time { return testNow }, LockTimeout: 5 * time.Second})
	must(t, err)
	done := make(chan error, 1)
	fired := false
	t.Cleanup(func() { faults.Set(nil) })
	faults.Set(migrateOnly(func(p faults.Point) error {
		if p != faults.ToDBLocked || fired {
			return nil
		}
		fired = true
		go func() {
			_, err := st.Check(context.Background(), store.CheckOptions{Repair: true}, func(store.Finding) error { return nil })
			done <- err
		}()
		if err, ok := waitingForTheLock(t, done); !ok {
			t.Errorf("check --repair did not wait for the migration's lock: %v", err)
			done <- err
		}
		return nil
	}))
	got, _ := migrate(t, root, false, testOpts())
	faults.Set(nil)
	if err := <-done; err != nil {
		t.Fatalf("check --repair: %v", err)
	}
	if r := got[key]; r.Action != Migrated {
		t.Fatalf("migrate: %+v", r)
	}
	names, err := os.ReadDir(filepath.Join(root, key))
	must(t, err)
	for _, n := range names {
		if n.Name() != db.FileName && n.Name() != "current.jsonl" {
			t.Errorf("left in the key dir: %s", n.Name())
		}
	}
	if sc, ok := dbValues(t, filepath.Join(root, key)); !ok || fmtValues(valuesOf(sc)) != plainWant {
		t.Errorf("meta.db: %s, want %s", fmtSidecars(sc), plainWant)
	}
	s, err := st.Resolve(key, store.Job{PiVersion: testPi, Venue: "local"}, t.TempDir())
	must(t, err)
	if !s.Resume {
		t.Errorf("resolve after both: %v %s", s.Resume, s.Reason)
	}
}

// TestResolveDuringEitherDirection: a resolve on another handle while a
// key is half converted (ToDB: committed, one legacy file removed;
// ToLegacy: one legacy file renamed into place, meta.db still there)
// waits for the key's lock, and its verdict and bytes are the key's
// before and after: it never reads half of each layout.
func TestResolveDuringEitherDirection(t *testing.T) {
	for _, c := range []struct {
		toLegacy bool
		point    faults.Point
	}{{false, faults.ToDBRemoved}, {true, faults.ToLegacyRenamed}} {
		root, key := oneKey(t)
		if c.toLegacy {
			migrate(t, root, false, testOpts())
		}
		st, err := store.New(root, store.Options{Now: func() time.Time { return testNow }, LockTimeout: 5 * time.Second})
		must(t, err)
		job := store.Job{PiVersion: testPi, Venue: "local", Model: "anthropic/claude-x"}
		before, err := st.Resolve(key, job, t.TempDir())
		must(t, err)
		done := make(chan store.Session, 1)
		fired := false
		faults.Set(migrateOnly(func(p faults.Point) error {
			if p != c.point || fired {
				return nil
			}
			fired = true
			go func() {
				s, err := st.Resolve(key, job, t.TempDir())
				if err != nil {
					t.Errorf("resolve: %v", err)
				}
				done <- s
			}()
			if s, ok := waitingForTheLock(t, done); !ok {
				t.Errorf("%s: the resolve did not wait for the migration's lock: %+v", c.point, s)
				done <- s
			}
			return nil
		}))
		migrate(t, root, c.toLegacy, testOpts())
		faults.Set(nil)
		during := <-done
		if !fired || during.Resume != before.Resume || during.Reason != before.Reason || during.Bytes != before.Bytes || during.CRC32C != before.CRC32C {
			t.Errorf("%s: resolve before %+v, during %+v", c.point, before, during)
		}
	}
}

// TestReapDuringToDB: a reap removes an expired legacy key while a
// migration waits for that key's lock (the reap holds it, about to rename
// the dir away). The key is gone when the migration gets the lock: it
// converted nothing, and the run must say the key vanished, not fail it
// (a failed key is exit 1, and a re-run has nothing to finish).
func TestReapDuringToDB(t *testing.T) {
	root := filepath.Join(t.TempDir(), "sessions")
	must(t, osMkdir(root))
	key := keyNamed(buildCorpus(t, root, "transcript expired"), "transcript expired")
	st, err := store.New(root, store.Options{Now: func() time.Time { return testNow }, LockTimeout: 5 * time.Second, Bounds: gates.Bounds{TTL: 14 * 24 * time.Hour}})
	must(t, err)
	done := make(chan map[string]Report, 1)
	fired := false
	t.Cleanup(func() { faults.Set(nil) })
	faults.Set(func(p faults.Point) error {
		if p != faults.ReapBeforeRemove || fired {
			return nil
		}
		fired = true
		go func() {
			// Not migrate(): that one may call t.Fatal, which only the
			// test's own goroutine may.
			got := map[string]Report{}
			if _, err := ToDB(root, testOpts(), func(r Report) error { got[r.Key] = r; return nil }); err != nil {
				t.Errorf("migrate: %v", err)
			}
			done <- got
		}()
		waitInStack(t, "sessdb/db.lockKey") // the migration is at the lock (a fixed sleep was not always enough under load)
		return nil
	})
	res, err := st.Reap(false)
	faults.Set(nil)
	must(t, err)
	got := <-done
	if !fired || len(res.Removed) != 1 {
		t.Fatalf("reap: %+v", res)
	}
	if r := got[key]; r.Action != Skipped || !strings.Contains(r.Cause, "vanished") {
		t.Errorf("migrate, the key reaped while it waited: %+v; want skip, vanished", r)
	}
	if _, err := os.Lstat(filepath.Join(root, key)); !os.IsNotExist(err) {
		t.Errorf("the key dir after both: %v", err)
	}
}

// TestQuarantineWhileAMigrationWaits: check --quarantine moves a key dir
// aside, whole, under the key's lock, and promises that nothing in the
// dir moved aside is changed. A migration that opened the key dir before
// the move and waits for that lock must find the dir gone from the key's
// name once it has the lock, and leave it: skip, vanished, in either
// direction, every entry of the quarantine dir as the quarantine left it.
// The quarantine's steps are Store.Quarantine's, done here by hand so that
// the migration is known to wait: for a key without meta.db, one made for
// the lock; the rename; that file removed again.
func TestQuarantineWhileAMigrationWaits(t *testing.T) {
	for _, back := range []bool{false, true} {
		root, key := oneKey(t)
		if back {
			migrate(t, root, false, testOpts())
		}
		dir := filepath.Join(root, key)
		kd, err := fsat.OpenDir(dir)
		must(t, err)
		_, hadDB := dbValues(t, dir)
		lock, err := db.OpenWriter(kd, filepath.Join(dir, db.FileName), db.Options{})
		must(t, err)
		done := make(chan map[string]Report, 1)
		go func() {
			got := map[string]Report{}
			if _, err := run(context.Background(), root, map[bool]conversion{false: toDB, true: toLegacy}[back], testOpts(), func(r Report) error { got[r.Key] = r; return nil }); err != nil {
				t.Errorf("migrate: %v", err)
			}
			done <- got
		}()
		waitInStack(t, "sessdb/db.lockKey") // the migration waits for the lock (a fixed sleep was not always enough under load)
		aside := filepath.Join(root, store.QuarantinePrefix+key+"-20261101T120000Z")
		must(t, os.Rename(dir, aside))
		if !hadDB {
			must(t, os.Remove(filepath.Join(aside, db.FileName)))
		}
		tree := treeState(t, aside, true, true)
		must(t, lock.Close())
		got := <-done
		kd.Close()
		if r := got[key]; r.Action != Skipped || r.Cause != vanishedCause {
			t.Errorf("%s: %+v, want skip, vanished", direction(back), r)
		}
		after := treeState(t, aside, true, true)
		// The dir's own mtime is not kept: the open that waited made a
		// meta.db for the lock, removed again as the quarantine removes
		// its own.
		delete(tree, ".")
		delete(after, ".")
		if d := diffStates(tree, after); d != "" {
			t.Errorf("%s: the quarantine dir changed:\n%s", direction(back), d)
		}
	}
}
