package migrate

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sessdb/store"
)

// A test a mutation sweep of the single-host protocol code showed missing
// (notes of helper mutants3).

// A key whose transcript is empty in place (cut out of band) is absent to
// the ladder before any record is compared: its rollback to the legacy
// layout keeps its venue and reports no mismatch with the record.
func TestToLegacyOfAnEmptyTranscriptIsNoMismatch(t *testing.T) {
	root := filepath.Join(t.TempDir(), "sessions")
	st, err := store.New(root, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	key := strings.Repeat("cd", 16)
	job := store.Job{PiVersion: "0.58.3", Venue: "local", Model: "m"}
	jobDir := t.TempDir()
	sess, err := st.Resolve(key, job, jobDir)
	if err != nil {
		t.Fatal(err)
	}
	data := `{"type":"session","version":3,"id":"x","timestamp":"2026-11-01T00:00:00.000Z","cwd":"/w"}` + "\n" + `{"type":"message"}` + "\n"
	if err := os.WriteFile(filepath.Join(jobDir, "session", "current.jsonl"), []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	if res, err := st.Promote(sess, store.PromoteRequest{PiVersion: job.PiVersion}); err != nil || !res.Promoted {
		t.Fatalf("promote: %+v %v", res, err)
	}
	if err := os.Truncate(filepath.Join(root, key, "current.jsonl"), 0); err != nil {
		t.Fatal(err)
	}
	var reports []Report
	if _, err := ToLegacy(root, Options{}, func(r Report) error { reports = append(reports, r); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(reports) != 1 || reports[0].Action != Migrated {
		t.Fatalf("reports %+v, want one key migrated", reports)
	}
	for _, o := range reports[0].Oddities {
		if strings.Contains(o.Found, "does not match its record") {
			t.Errorf("an empty transcript reported as a mismatch: %+v", o)
		}
	}
	if b, err := os.ReadFile(filepath.Join(root, key, "venue")); err != nil || string(b) != "local" {
		t.Fatalf("venue after the rollback: %q, %v; want local", b, err)
	}
}

// A legacy lock written this very second (age 0) is a fresh lock of a
// worker that may be writing, not one dated in the future: the report
// says how old it is and to stop the workers.
func TestALockOfAgeZeroIsNotInTheFuture(t *testing.T) {
	root, key := oneKey(t)
	lock := filepath.Join(root, key, "lock")
	must(t, os.WriteFile(lock, nil, 0o600))
	at := testNow.Truncate(time.Second)
	must(t, os.Chtimes(lock, at, at))
	opts := testOpts()
	opts.Now = func() time.Time { return at }
	got, _ := migrate(t, root, false, opts)
	r := got[key]
	if r.Action != Locked || strings.Contains(r.Cause, "future") || !strings.Contains(r.Cause, "0s old") {
		t.Fatalf("a lock of age 0: %+v; want locked, 0s old", r)
	}
}

// A sidecar of exactly the legacy bound (4096 bytes) is one the legacy
// reader read: an oddity about it quotes what it holds, never calls it
// unreadable.
func TestASidecarOfExactlyTheBoundIsQuoted(t *testing.T) {
	root, key := oneKey(t)
	must(t, os.WriteFile(filepath.Join(root, key, "venue"), []byte(strings.Repeat(" ", 4096)), 0o600))
	got, _ := migrate(t, root, false, testOpts())
	var found []string
	for _, o := range got[key].Oddities {
		if o.File == "venue" {
			found = append(found, o.Found)
		}
	}
	if len(found) != 1 || !strings.Contains(found[0], "(4096 bytes)") {
		t.Fatalf("a 4096-byte venue of blanks: oddities found %q; want one quoting it, (4096 bytes)", found)
	}
}

// The legacy worker's own test of a lock is age <= LOCK_STALE_MS: a lock
// exactly an hour old is still fresh, and its key is left locked.
func TestALockOfExactlyAnHourIsFresh(t *testing.T) {
	root, key := oneKey(t)
	lock := filepath.Join(root, key, "lock")
	must(t, os.WriteFile(lock, nil, 0o600))
	now := testNow.Truncate(time.Second)
	at := now.Add(-LockStale)
	must(t, os.Chtimes(lock, at, at))
	opts := testOpts()
	opts.Now = func() time.Time { return now }
	got, _ := migrate(t, root, false, opts)
	if r := got[key]; r.Action != Locked {
		t.Fatalf("a lock of exactly %s: %+v; want locked", LockStale, r)
	}
	if _, err := os.Lstat(lock); err != nil {
		t.Fatalf("the fresh lock: %v", err)
	}
}

// A meta.db with values but no transcript record (a legacy key migrated
// while it had no transcript) beside a transcript put in place since:
// the rollback keeps the file, with no record's time to give it.
func TestToLegacyOfATranscriptNoRecordNames(t *testing.T) {
	root, key := oneKey(t)
	cur := filepath.Join(root, key, "current.jsonl")
	data, err := os.ReadFile(cur)
	must(t, err)
	must(t, os.Remove(cur))
	if r := migrateKey(t, root, key, false); r.Action != Migrated {
		t.Fatalf("to db: %+v", r)
	}
	if sc, ok := dbValues(t, filepath.Join(root, key)); !ok || sc.Transcript != nil || sc.Venue == nil {
		t.Fatalf("meta.db: %+v, %v; want values and no transcript record", sc, ok)
	}
	must(t, os.WriteFile(cur, data, 0o600))
	if r := migrateKey(t, root, key, true); r.Action != Migrated {
		t.Fatalf("to legacy: %+v", r)
	}
	if b, err := os.ReadFile(cur); err != nil || !bytes.Equal(b, data) {
		t.Fatalf("the transcript after the rollback: %d bytes, %v", len(b), err)
	}
}

func migrateKey(t *testing.T, root, key string, toLegacy bool) Report {
	t.Helper()
	got, _ := migrate(t, root, toLegacy, testOpts())
	return got[key]
}
