package fleet

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sessdb/db"
	"sessdb/gates"
	"sessdb/internal/etcdtest"
	"sessdb/migrate"
	"sessdb/store"
)

// A key moved into etcd whose generation file was then deleted from the
// transcripts dir is brought back by the next --to etcd from the key dir
// it came from, at the record's own name: the record, its revision (every
// job's ticket) and the history stay as they are, and the fleet resumes
// the key again. Its dry run plans the write and makes none. A key whose
// key dir no longer holds that generation (its transcript edited in place
// after the move) gets nothing written: the fleet cold-starts it either
// way. Before, both reported already and wrote nothing, and the fleet
// cold-started the first as transcript-replaced after every run.
func TestMigrateToEtcdWritesAgainAGenerationFileThatIsMissing(t *testing.T) {
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	root := t.TempDir()
	h := newHostBuilder(t, root)
	missing := store.Key("github", "missing-file", "a")
	edited := store.Key("github", "missing-file", "b")
	whole := store.Key("github", "missing-file", "c")
	for _, k := range []string{missing, edited, whole} {
		h.mustPromote(k, migJob, "m1", store.PromoteRequest{})
		h.mustPromote(k, migJob, "m2", store.PromoteRequest{})
	}
	first, _ := runMigration(t, true, root, f.b, migOpts())
	fileOf := map[string]string{}
	for _, k := range []string{missing, edited, whole} {
		if r := first[k]; r.Action != migrate.Migrated || len(r.Written) != 2 {
			t.Fatalf("%s: first move %s %v (%s)", k, r.Action, r.Written, r.Cause)
		}
		fileOf[k] = first[k].Written[0]
	}
	hostBytes, err := os.ReadFile(h.path(missing, store.TranscriptName))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{missing, edited} {
		if err := os.Remove(filepath.Join(f.dir, fileOf[k])); err != nil {
			t.Fatal(err)
		}
	}
	p := h.path(edited, store.TranscriptName)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, bytes.ToUpper(b), 0o600); err != nil {
		t.Fatal(err)
	}
	f.now = migNow
	resolve := func() store.Session {
		t.Helper()
		sess, err := f.s.Resolve(missing, migJob, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return sess
	}
	if sess := resolve(); sess.Resume || sess.Reason != gates.TranscriptReplaced {
		t.Fatalf("the fleet with the file gone: resume %v (%s); want transcript-replaced", sess.Resume, sess.Reason)
	}
	inEtcd := etcdOf(t, c, f.prefix)

	dry := migOpts()
	dry.DryRun = true
	planned, _ := runMigration(t, true, root, f.b, dry)
	done, sum := runMigration(t, true, root, f.b, migOpts())
	for _, run := range []map[string]MigrateReport{planned, done} {
		if r := run[missing]; r.Action != migrate.Already || !slices.Equal(r.Written, []string{fileOf[missing]}) || !strings.Contains(r.Cause, "missing") {
			t.Errorf("the key whose file is missing: %s %v (%s); want already, writing %s, saying it was missing", r.Action, r.Written, r.Cause, fileOf[missing])
		}
		if r := run[edited]; r.Action != migrate.Already || len(r.Written) != 0 || !strings.Contains(r.Cause, "not written again") {
			t.Errorf("the key whose key dir no longer holds the generation: %s %v (%s); want already, nothing written, saying why", r.Action, r.Written, r.Cause)
		}
		if r := run[whole]; r.Action != migrate.Already || len(r.Written) != 0 || r.Cause != "" {
			t.Errorf("the key whose file is in place: %s %v (%s); want already, nothing written", r.Action, r.Written, r.Cause)
		}
	}
	if !sum.Complete() || sum.Already != 3 {
		t.Errorf("the run's summary: %+v", sum)
	}
	if got, err := os.ReadFile(filepath.Join(f.dir, fileOf[missing])); err != nil || !bytes.Equal(got, hostBytes) {
		t.Errorf("the file written again: %d bytes, %v; want the key dir's %d", len(got), err, len(hostBytes))
	}
	if _, err := os.Lstat(filepath.Join(f.dir, fileOf[edited])); !os.IsNotExist(err) {
		t.Errorf("the edited key's file: %v; want it still missing", err)
	}
	if d := diffMaps(inEtcd, etcdOf(t, c, f.prefix)); d != "" {
		t.Errorf("etcd changed:\n%s", d)
	}
	if sess := resolve(); !sess.Resume || sess.Gen() != 2 {
		t.Errorf("the fleet after the run: resume %v gen %d (%s); want gen 2 resumed", sess.Resume, sess.Gen(), sess.Reason)
	}
	again, _ := runMigration(t, true, root, f.b, migOpts())
	if r := again[missing]; r.Action != migrate.Already || len(r.Written) != 0 || r.Cause != "" {
		t.Errorf("a run after it: %s %v (%s); want already, nothing written", r.Action, r.Written, r.Cause)
	}
}

// A key dir's transcript changed while --to etcd copies it, by something
// that ignores the key dir's lock (the run read its size and CRC32C under
// the lock first): the copy is removed and the key failed, saying so, in
// the first move (no record made) and in a write of a missing file again
// (the file still missing). A re-run, the transcript left alone, moves it.
func TestMigrateToEtcdRemovesACopyOfATranscriptChangedUnderIt(t *testing.T) {
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	root := t.TempDir()
	h := newHostBuilder(t, root)
	key := store.Key("github", "changed-under", "a")
	h.mustPromote(key, migJob, "c1", store.PromoteRequest{})
	p := h.path(key, store.TranscriptName)
	original, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	changeOnce := func() {
		changed := false
		f.b.hook = func(point, k string) error {
			if point == hookMigrateCopy && k == key && !changed {
				changed = true
				b, err := os.ReadFile(p)
				if err != nil {
					return err
				}
				return os.WriteFile(p, bytes.ToUpper(b), 0o600) // in place: the file the run has open
			}
			return nil
		}
	}
	keyFiles := func() []string {
		names, _ := filepath.Glob(filepath.Join(f.dir, key, "*"))
		return names
	}
	changeOnce()
	got, _ := runMigration(t, true, root, f.b, migOpts())
	if r := got[key]; r.Action != migrate.Failed || !strings.Contains(r.Cause, "changed while it was read") {
		t.Errorf("the first move of a transcript changed under it: %s (%s); want failed, saying it changed", r.Action, r.Cause)
	}
	if n := len(etcdOf(t, c, f.prefix)); n > 1 { // the fleet's ID at most
		t.Errorf("etcd holds %d keys after the failed move", n)
	}
	if files := keyFiles(); len(files) != 0 {
		t.Errorf("the key's files after the failed move: %v; want none", files)
	}

	f.b.hook = nil
	if err := os.WriteFile(p, original, 0o600); err != nil {
		t.Fatal(err)
	}
	got, _ = runMigration(t, true, root, f.b, migOpts())
	if r := got[key]; r.Action != migrate.Migrated {
		t.Fatalf("the move again: %s (%s)", r.Action, r.Cause)
	}
	file := got[key].Written[0]
	if err := os.Remove(filepath.Join(f.dir, file)); err != nil {
		t.Fatal(err)
	}
	changeOnce()
	got, _ = runMigration(t, true, root, f.b, migOpts())
	if r := got[key]; r.Action != migrate.Failed || !strings.Contains(r.Cause, "changed while it was read") || len(r.Written) != 0 {
		t.Errorf("writing the missing file again from a transcript changed under it: %s %v (%s); want failed, nothing written", r.Action, r.Written, r.Cause)
	}
	if files := keyFiles(); len(files) != 0 {
		t.Errorf("the key's files after the failed write: %v; want none", files)
	}
}

// What writeMissing leaves alone, each on a run after the key's first
// move: a key moved with no transcript (its record's file gone from the
// key dir, or a transcript there that no record names) has no file to
// bring back, and is already, nothing written; a
// file name its record holds where something else is (a directory) gets
// nothing written, nor planned by a dry run; and a missing file another
// run wrote while this one got ready to write it (at the copy's hook) is
// that run's: already, nothing written by this one, no failure. A key
// the fleet promoted since (etcd's generation descends from the key
// dir's) whose file is missing is the fleet's own loss, no file of the
// key dir's: already, the report saying the fleet promoted it since.
func TestMigrateToEtcdWritesAgainOnlyAFileThatIsMissing(t *testing.T) {
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	root := t.TempDir()
	h := newHostBuilder(t, root)
	absent := store.Key("github", "write-again", "absent")
	taken := store.Key("github", "write-again", "taken")
	raced := store.Key("github", "write-again", "raced")
	promoted := store.Key("github", "write-again", "promoted-since")
	for _, k := range []string{absent, taken, raced, promoted} {
		h.mustPromote(k, migJob, "w1", store.PromoteRequest{})
	}
	if err := os.Remove(h.path(absent, store.TranscriptName)); err != nil {
		t.Fatal(err)
	}
	unrecorded := store.Key("github", "write-again", "unrecorded")
	if err := os.MkdirAll(filepath.Join(root, unrecorded), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, unrecorded, store.TranscriptName), convo(migNow, "by hand"), 0o600); err != nil {
		t.Fatal(err)
	}
	v := migPi
	updateMeta(t, filepath.Join(root, unrecorded), func(tx *db.Tx) error { return tx.PutSidecars(db.Sidecars{PiVersion: &v}) })
	first, _ := runMigration(t, true, root, f.b, migOpts())
	for _, k := range []string{absent, unrecorded, taken, raced} {
		if r := first[k]; r.Action != migrate.Migrated {
			t.Fatalf("%s: first move %s %v (%s)", k, r.Action, r.Written, r.Cause)
		}
	}
	fileOf := func(k string) string { return first[k].Written[0] }
	if err := os.Remove(filepath.Join(f.dir, fileOf(taken))); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(f.dir, fileOf(taken)), 0o700); err != nil {
		t.Fatal(err)
	}
	f.now = migNow
	f.run(promoted, "fleet w2")
	if err := os.Remove(filepath.Join(f.dir, f.recordFile(promoted))); err != nil {
		t.Fatal(err)
	}
	racedFile := filepath.Join(f.dir, fileOf(raced))
	racedBytes, err := os.ReadFile(racedFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(racedFile); err != nil {
		t.Fatal(err)
	}

	dry := migOpts()
	dry.DryRun = true
	planned, _ := runMigration(t, true, root, f.b, dry)
	for _, k := range []string{absent, unrecorded, taken} {
		if r := planned[k]; r.Action != migrate.Already || len(r.Written) != 0 {
			t.Errorf("%s: dry run %s %v (%s); want already, nothing to write", k, r.Action, r.Written, r.Cause)
		}
	}
	otherRun := false
	f.b.hook = func(point, k string) error {
		if point == hookMigrateCopy && k == raced && !otherRun {
			otherRun = true
			return os.WriteFile(racedFile, racedBytes, 0o600)
		}
		return nil
	}
	done, _ := runMigration(t, true, root, f.b, migOpts())
	f.b.hook = nil
	for _, k := range []string{absent, unrecorded, taken, raced} {
		if r := done[k]; r.Action != migrate.Already || len(r.Written) != 0 {
			t.Errorf("%s: %s %v (%s); want already, nothing written", k, r.Action, r.Written, r.Cause)
		}
	}
	if !otherRun {
		t.Error("the run never came to write the raced key's file")
	}
	for name, run := range map[string]map[string]MigrateReport{"dry run": planned, "run": done} {
		if r := run[promoted]; r.Action != migrate.Already || len(r.Written) != 0 || !strings.Contains(r.Cause, "promoted it since") {
			t.Errorf("%s: the key the fleet promoted since, its file missing: %s %v (%s); want already, nothing written, saying the fleet promoted it since", name, r.Action, r.Written, r.Cause)
		}
	}
	if st, err := os.Lstat(filepath.Join(f.dir, fileOf(taken))); err != nil || !st.IsDir() {
		t.Errorf("the directory at the taken key's file name: %v; want it left", err)
	}
	if got, err := os.ReadFile(racedFile); err != nil || !bytes.Equal(got, racedBytes) {
		t.Errorf("the raced key's file: %d bytes, %v; want the other run's", len(got), err)
	}
}
