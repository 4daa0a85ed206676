package fleet

import (
	"errors"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"sessdb/db"
	"sessdb/fleet/etcdmeta"
	"sessdb/internal/etcdtest"
	"sessdb/internal/faults"
	"sessdb/internal/fsat"
	"sessdb/migrate"
	"sessdb/store"
	"sessdb/store/legacy"
	"sessdb/store/transcript"
)

// TestMigrateBackKeepsTheFleetsRefusals: a refusal the fleet recorded on
// a key it holds at the generation the key dir holds (no promotion since)
// is a history entry the key dir lacks; brought back into its own root,
// the key must keep it, and a second run then finds nothing to do.
func TestMigrateBackKeepsTheFleetsRefusals(t *testing.T) {
	etcdtest.Beside(t)
	f := newFixture(t, etcdtest.Start1(t))
	root := t.TempDir()
	h := newHostBuilder(t, root)
	key := store.Key("github", "own", "refused")
	h.mustPromote(key, migJob, "h1", store.PromoteRequest{})
	runMigration(t, true, root, f.b, migOpts())

	sess, _ := f.job(key, "unanswered")
	res, err := f.s.Promote(sess, store.PromoteRequest{PiVersion: testJob.PiVersion, Require: transcript.Answered})
	if err != nil || res.Promoted {
		t.Fatalf("the fleet's promotion was not refused: %+v, %v", res, err)
	}
	st, err := f.b.meta.Get(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	want := st.History[len(st.History)-1]
	if want.Outcome == "" {
		t.Fatalf("the fleet recorded no refusal: %+v", st.History)
	}

	reports, sum := runMigration(t, false, root, f.b, migOpts())
	if r := reports[key]; !sum.Complete() || r.Action == migrate.Failed {
		t.Fatalf("from etcd: %s (%s)", r.Action, r.Cause)
	}
	_, hist := hostState(t, filepath.Join(root, key))
	if len(hist) != len(st.History) || hist[len(hist)-1].Outcome != want.Outcome || hist[len(hist)-1].At != want.At {
		t.Errorf("the key dir's history is %+v, the fleet's %+v", hist, st.History)
	}
	if again, _ := runMigration(t, false, root, f.b, migOpts()); again[key].Action != migrate.Already {
		t.Errorf("second run: %s (%s)", again[key].Action, again[key].Cause)
	}
}

// TestMigrateBackDryRunListsTheTempsItSweeps: a promotion temp a killed
// FromEtcd left in a key dir is removed by the run, which says so in
// Removed; the dry run must list it too.
func TestMigrateBackDryRunListsTheTempsItSweeps(t *testing.T) {
	etcdtest.Beside(t)
	f := newFixture(t, etcdtest.Start1(t))
	root := t.TempDir()
	h := newHostBuilder(t, root)
	key := store.Key("github", "own", "temp")
	h.mustPromote(key, migJob, "h1", store.PromoteRequest{})
	runMigration(t, true, root, f.b, migOpts())
	f.run(key, "fleet 2")
	tmp := ".current.jsonl.tmp-0123456789abcdef"
	if err := os.WriteFile(filepath.Join(root, key, tmp), []byte("half a copy"), 0o600); err != nil {
		t.Fatal(err)
	}
	dry := migOpts()
	dry.DryRun = true
	planned, _ := runMigration(t, false, root, f.b, dry)
	done, _ := runMigration(t, false, root, f.b, migOpts())
	if p, d := planned[key], done[key]; p.Action != d.Action || !slices.Equal(p.Removed, d.Removed) || !slices.Contains(d.Removed, tmp) {
		t.Errorf("the dry run said %s %v, the run did %s %v", p.Action, p.Removed, d.Action, d.Removed)
	}
}

// TestAMigrationThereAndBackKeepsEveryField: a key moved to etcd and back
// into a fresh root holds the record and the history it had, every field
// of every entry (seq apart: meta.db numbers its own). Compared as the
// key dirs hold them, not through this package's conversions, which
// would drop a field on both sides alike; the entry added here sets every
// field, and the test says so if a field is added and left zero.
func TestAMigrationThereAndBackKeepsEveryField(t *testing.T) {
	etcdtest.Beside(t)
	f := newFixture(t, etcdtest.Start1(t))
	root := t.TempDir()
	h := newHostBuilder(t, root)
	key := store.Key("github", "own", "every-field")
	h.mustPromote(key, migJob, "h1", store.PromoteRequest{})
	full := db.HistoryEntry{Gen: 1, At: migNow.UnixNano(), Resumed: true, Reason: "resumed", Bytes: 321, Chain: 2, Job: "job-every-field",
		TornTail: true, Outcome: "run-incomplete", Ticket: "ticket-every-field", Run: "run-every-field", Rewritten: true, BaseGen: 1, CRC32C: 0xdeadbeef}
	v := reflect.ValueOf(full)
	for i := range v.NumField() {
		if name := v.Type().Field(i).Name; name != "Seq" && v.Field(i).IsZero() {
			t.Fatalf("the test's entry leaves %s zero: a field dropped on the way would go unseen", name)
		}
	}
	updateMeta(t, h.path(key), func(tx *db.Tx) error { _, err := tx.AppendHistory(full); return err })

	runMigration(t, true, root, f.b, migOpts())
	back := t.TempDir()
	if reports, sum := runMigration(t, false, back, f.b, migOpts()); !sum.Complete() {
		t.Fatalf("from etcd: %+v", reports[key])
	}
	scBefore, before := hostState(t, h.path(key))
	scAfter, after := hostState(t, filepath.Join(back, key))
	scBefore.Pending, scAfter.Pending = nil, nil
	if !reflect.DeepEqual(scAfter, scBefore) {
		t.Errorf("there and back, the record is %s, was %s", fmtSC(scAfter), fmtSC(scBefore))
	}
	for _, hist := range [][]db.HistoryEntry{before, after} {
		for i := range hist {
			hist[i].Seq = 0
		}
	}
	if !reflect.DeepEqual(after, before) {
		t.Errorf("there and back, the history is\n%+v\nwas\n%+v", after, before)
	}
}

// TestFromEtcdSkipsAKeyWhoseRecordLeftAfterTheListing: FromEtcd lists
// etcd once and reads each key again at its turn; a key whose record a
// reap or an operator removed in between is skipped as vanished, and
// nothing is made for it under the root (no key dir, no meta.db holding
// only its history).
func TestFromEtcdSkipsAKeyWhoseRecordLeftAfterTheListing(t *testing.T) {
	f := newFixture(t, etcdtest.Start1(t))
	keys := []string{store.Key("github", "own", "stays"), store.Key("github", "own", "leaves")}
	slices.Sort(keys)
	first, gone := keys[0], keys[1]
	for _, k := range keys {
		f.run(k, "m1")
	}
	var once sync.Once
	faults.Set(func(p faults.Point) error {
		if p == faults.FromEtcdLocked {
			// Under the first key's lock: the one worker has not begun the
			// second key.
			once.Do(func() {
				if _, err := f.c.Client(t).Delete(t.Context(), f.b.meta.RecordKey(gone)); err != nil {
					t.Error(err)
				}
			})
		}
		return nil
	})
	t.Cleanup(func() { faults.Set(nil) })
	root := t.TempDir()
	reports, _ := runMigration(t, false, root, f.b, migOpts())
	if r := reports[first]; r.Action != migrate.Migrated {
		t.Errorf("the key that stays: %s (%s), want migrated", r.Action, r.Cause)
	}
	if r := reports[gone]; r.Action != migrate.Skipped || !strings.Contains(r.Cause, "vanished") {
		t.Errorf("the key whose record left after the listing: %s (%s), want skipped, vanished", r.Action, r.Cause)
	}
	if _, err := os.Lstat(filepath.Join(root, gone)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the vanished key's dir: %v, want none made", err)
	}
}

// TestFromEtcdLeavesATranscriptNoRecordNames: a key dir whose meta.db
// holds stamps and no transcript, beside a current.jsonl (a first
// promotion that died before its commit, a file put there by hand),
// holds bytes no record names. Bringing the fleet's key there is a
// conflict, whether etcd's record names a generation or, as meta.db's,
// none, and the file is left as it was: never written over. So is a key
// dir whose current.jsonl was changed in place since the generation its
// record names came from the fleet (the same size, other bytes), or made
// a link: left alone, the link neither followed nor replaced.
func TestFromEtcdLeavesATranscriptNoRecordNames(t *testing.T) {
	etcdtest.Beside(t)
	f := newFixture(t, etcdtest.Start1(t))
	promoted, stamped := store.Key("github", "own", "unrecorded"), store.Key("github", "own", "unrecorded-stamps")
	f.run(promoted, "fleet 1")
	v := migPi
	if _, err := f.b.meta.Put(t.Context(), stamped, 0, recordOf(db.Sidecars{PiVersion: &v}, ""), etcdmeta.HistoryEntry{At: migNow.UnixNano()}); err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	unrecorded := convo(migNow, "by hand")
	for _, key := range []string{promoted, stamped} {
		dir := filepath.Join(root, key)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, store.TranscriptName), unrecorded, 0o600); err != nil {
			t.Fatal(err)
		}
		updateMeta(t, dir, func(tx *db.Tx) error { return tx.PutSidecars(db.Sidecars{PiVersion: &v}) })
	}
	changed, linked := store.Key("github", "own", "changed-in-place"), store.Key("github", "own", "linked-in-place")
	f.run(changed, "fleet 1")
	f.run(linked, "fleet 1")
	if r, _ := runMigration(t, false, root, f.b, migOpts()); r[changed].Action != migrate.Migrated || r[linked].Action != migrate.Migrated {
		t.Fatalf("from etcd, the keys then changed in place: %+v", r)
	}
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("not a transcript\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(root, linked, store.TranscriptName)
	if err := os.Remove(link); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, link); err != nil {
		t.Fatal(err)
	}
	cur := filepath.Join(root, changed, store.TranscriptName)
	was, err := os.ReadFile(cur)
	if err != nil {
		t.Fatal(err)
	}
	now := []byte(strings.Replace(string(was), `"fleet 1"`, `"fleet X"`, 1))
	if err := os.WriteFile(cur, now, 0o600); err != nil || len(now) != len(was) || string(now) == string(was) {
		t.Fatalf("changing %s in place: %v", cur, err)
	}
	reports, _ := runMigration(t, false, root, f.b, migOpts())
	if r := reports[changed]; r.Action != Conflict || !strings.Contains(r.Cause, "not that generation") {
		t.Errorf("from etcd over a current.jsonl changed in place: %s (%s), want a conflict", r.Action, r.Cause)
	}
	if data, _ := os.ReadFile(cur); string(data) != string(now) {
		t.Error("the current.jsonl changed in place was written over")
	}
	if r := reports[linked]; r.Action != Conflict || !strings.Contains(r.Cause, "not that generation") {
		t.Errorf("from etcd over a current.jsonl made a link: %s (%s), want a conflict", r.Action, r.Cause)
	}
	if to, err := os.Readlink(link); err != nil || to != secret {
		t.Errorf("the current.jsonl made a link is now %q (%v): replaced", to, err)
	}
	for _, key := range []string{promoted, stamped} {
		if r := reports[key]; r.Action != Conflict || !strings.Contains(r.Cause, "no record") && !strings.Contains(r.Cause, "not that generation") {
			t.Errorf("from etcd over a transcript no record names (%s): %s (%s), want a conflict", key, r.Action, r.Cause)
		}
		if data, err := os.ReadFile(filepath.Join(root, key, store.TranscriptName)); err != nil || string(data) != string(unrecorded) {
			t.Errorf("the transcript no record named (%s) is now %d bytes (%v), was %d: written over", key, len(data), err, len(unrecorded))
		}
	}
}

// TestFromEtcdOfAFileChangedUnderItsCopyWritesNothing: the fleet's file is
// checksummed before the key dir's lock is taken and copied after; one
// changed in place in between (the same size, other bytes: a hand edit,
// a bad disk) fails the key, and the key dir is left as it was: no
// record naming bytes the copy does not hold, no temp. Changed before
// the run, it is copied as it is, the mismatch named in the report.
func TestFromEtcdOfAFileChangedUnderItsCopyWritesNothing(t *testing.T) {
	f := newFixture(t, etcdtest.Start1(t))
	key := store.Key("github", "own", "changed-under-copy")
	f.run(key, "fleet 1")
	file := filepath.Join(f.dir, f.recordFile(key))
	faults.Set(func(p faults.Point) error {
		if p == faults.FromEtcdLocked {
			data, err := os.ReadFile(file)
			if err == nil {
				err = os.WriteFile(file, []byte(strings.Replace(string(data), `"fleet 1"`, `"fleet X"`, 1)), 0o600)
			}
			if err != nil {
				t.Error(err)
			}
		}
		return nil
	})
	t.Cleanup(func() { faults.Set(nil) })
	root := t.TempDir()
	reports, _ := runMigration(t, false, root, f.b, migOpts())
	if r := reports[key]; r.Action != migrate.Failed || !strings.Contains(r.Cause, "changed") {
		t.Errorf("from etcd of a file changed under its copy: %s (%s), want failed", r.Action, r.Cause)
	}
	ents, _ := os.ReadDir(filepath.Join(root, key))
	for _, e := range ents {
		if e.Name() != db.FileName {
			t.Errorf("the key dir holds %s after a copy that failed", e.Name())
		}
	}
	// The key dir the run made, and the meta.db its open made for the
	// lock, are taken away again: no record.
	if _, err := os.Lstat(filepath.Join(root, key)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the key dir the run made: %v after a copy that failed; want it gone", err)
	}

	// Changed before the run, the file is copied as it is, and the report
	// says it does not match its record (the store then cold-starts it
	// as transcript-replaced, as the fleet does).
	faults.Set(nil)
	reports, _ = runMigration(t, false, root, f.b, migOpts())
	r := reports[key]
	if r.Action != migrate.Migrated || len(r.Oddities) != 1 || r.Oddities[0].File != f.recordFile(key) || !strings.Contains(r.Oddities[0].Found, "does not match its record") {
		t.Errorf("from etcd of a file that does not match its record: %s (%s), oddities %+v; want migrated, the mismatch named", r.Action, r.Cause, r.Oddities)
	}
}

// TestFromEtcdIntoAKeyDirWithoutHistory: a key dir whose meta.db holds a
// record and no history (a record put by hand, a history lost) is judged
// by its transcript alone. With none, there is nothing the fleet's
// generation could lose: brought in. With one, the fleet's generation
// descends from it only if it begins with its bytes: one that does not is
// a conflict, and the key dir's transcript is never written over.
func TestFromEtcdIntoAKeyDirWithoutHistory(t *testing.T) {
	etcdtest.Beside(t)
	f := newFixture(t, etcdtest.Start1(t))
	stamps, own := store.Key("github", "own", "no-history-stamps"), store.Key("github", "own", "no-history-own")
	f.run(stamps, "fleet 1")
	f.run(own, "fleet 1")
	f.run(own, "fleet 2")
	root := t.TempDir()
	ownBytes := convo(migNow, "host 1")
	v := migPi
	for key, sc := range map[string]db.Sidecars{
		stamps: {PiVersion: &v},
		own: {PiVersion: &v, Transcript: &db.Transcript{Gen: 1, Size: int64(len(ownBytes)),
			CRC32C: uint64(crc32.Checksum(ownBytes, crc32.MakeTable(crc32.Castagnoli))), PromotedAt: migNow.UnixNano()}},
	} {
		dir := filepath.Join(root, key)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if sc.Transcript != nil {
			if err := os.WriteFile(filepath.Join(dir, store.TranscriptName), ownBytes, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		updateMeta(t, dir, func(tx *db.Tx) error { return tx.PutSidecars(sc) })
	}
	reports, _ := runMigration(t, false, root, f.b, migOpts())
	if r := reports[stamps]; r.Action != migrate.Migrated {
		t.Errorf("from etcd into a key dir of stamps only, no history: %s (%s), want migrated", r.Action, r.Cause)
	} else if sc, _ := hostState(t, filepath.Join(root, stamps)); sc.Transcript == nil || sc.Transcript.Gen != 1 {
		t.Errorf("the key dir of stamps only now records %+v, want the fleet's gen 1", sc.Transcript)
	}
	if r := reports[own]; r.Action != Conflict {
		t.Errorf("from etcd into a key dir with a transcript and no history, etcd's gen 2 not beginning with it: %s (%s), want a conflict", r.Action, r.Cause)
	}
	if data, err := os.ReadFile(filepath.Join(root, own, store.TranscriptName)); err != nil || string(data) != string(ownBytes) {
		t.Errorf("the key dir's own transcript is now %d bytes (%v), was %d: written over", len(data), err, len(ownBytes))
	}
}

// TestToEtcdOfAMetaDBWithoutARecord: a key dir whose meta.db holds no
// record (a first promotion, or a migration, that died before its commit)
// is judged by its legacy files, as the store judges it: beside a legacy
// transcript it is refused (run sessdb migrate first); with nothing else
// it is skipped. Neither writes a record to etcd: an empty one would make
// the fleet answer absent for a conversation the key dir holds.
func TestToEtcdOfAMetaDBWithoutARecord(t *testing.T) {
	etcdtest.Beside(t)
	f := newFixture(t, etcdtest.Start1(t))
	root := t.TempDir()
	withLegacy, empty := store.Key("github", "own", "no-record-legacy"), store.Key("github", "own", "no-record-empty")
	for _, key := range []string{withLegacy, empty} {
		dir := filepath.Join(root, key)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		updateMeta(t, dir, nil)
	}
	if err := os.WriteFile(filepath.Join(root, withLegacy, legacy.TranscriptName), convo(migNow, "legacy"), 0o600); err != nil {
		t.Fatal(err)
	}
	reports, _ := runMigration(t, true, root, f.b, migOpts())
	if r := reports[withLegacy]; r.Action != migrate.Failed || !strings.Contains(r.Cause, "legacy layout") {
		t.Errorf("to etcd of a meta.db without a record beside a legacy transcript: %s (%s), want failed, the legacy layout", r.Action, r.Cause)
	}
	if r := reports[empty]; r.Action != migrate.Skipped {
		t.Errorf("to etcd of a meta.db without a record, and nothing else: %s (%s), want skipped", r.Action, r.Cause)
	}
	for _, key := range []string{withLegacy, empty} {
		if st, err := f.b.meta.Get(t.Context(), key); err != nil || st.Rev != 0 {
			t.Errorf("%s: etcd holds a record at %d (%v), want none", key, st.Rev, err)
		}
	}
}

// updateMeta runs update (if not nil) in a transaction on the meta.db of
// the key dir at dir, made where there is none.
func updateMeta(t *testing.T, dir string, update func(*db.Tx) error) {
	t.Helper()
	kd, err := fsat.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer kd.Close()
	d, _, err := db.OpenSidecars(kd, db.Options{LockTimeout: 10 * time.Second}, true)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if update == nil {
		return
	}
	if err := d.Update(update); err != nil {
		t.Fatal(err)
	}
}
