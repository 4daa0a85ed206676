package migrate

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"sessdb/db"
	"sessdb/gates"
	"sessdb/internal/fsat"
	"sessdb/internal/testfs"
	"sessdb/store"
)

// TestRollbackKeepsAReplacedTranscriptCold: meta.db cold-starts a
// transcript that does not match its record (transcript-replaced); the
// legacy layout has no record, so the rollback stamps "(pending)" and the
// key stays cold, under another name.
func TestRollbackKeepsAReplacedTranscriptCold(t *testing.T) {
	root, keys := newCorpus(t)
	key := keyNamed(keys, "plain")
	migrate(t, root, false, testOpts())
	p := filepath.Join(root, key, "current.jsonl")
	must(t, os.WriteFile(p, []byte(transcriptBytes(testNow)), 0o600))
	st, err := store.New(root, store.Options{Now: func() time.Time { return testNow }})
	must(t, err)
	job := store.Job{PiVersion: testPi, Venue: "local"}
	if s, _ := st.Resolve(key, job, t.TempDir()); s.Resume || s.Reason != gates.TranscriptReplaced {
		t.Fatalf("before the rollback: %v %s", s.Resume, s.Reason)
	}
	got, _ := migrate(t, root, true, testOpts())
	if r := got[key]; r.Action != Migrated || len(r.Oddities) == 0 || *r.Values.Venue != "(pending)" {
		t.Fatalf("rollback: %+v", r)
	}
	if s, _ := st.Resolve(key, job, t.TempDir()); s.Resume || s.Reason != gates.VenueChanged {
		t.Fatalf("after the rollback: %v %s", s.Resume, s.Reason)
	}
}

// TestDirectoryWithEntriesAtASidecarName: it held no value and is never
// removed; ToDB leaves it, ToLegacy cannot put a file there and says so,
// and once the operator has moved it the rollback goes through.
func TestDirectoryWithEntriesAtASidecarName(t *testing.T) {
	root, keys := newCorpus(t)
	key := keyNamed(keys, "plain")
	venue := filepath.Join(root, key, "venue")
	must(t, os.Remove(venue))
	must(t, os.MkdirAll(filepath.Join(venue, "inside"), 0o700))
	got, _ := migrate(t, root, false, testOpts())
	if r := got[key]; r.Action != Migrated || fmtValues(*r.Values) != want(`venue="(pending)"`) || slices.Contains(r.Removed, "venue") {
		t.Fatalf("migrate: %+v", r)
	}
	if got, _ := migrate(t, root, false, testOpts()); got[key].Action != Already || len(got[key].Removed) != 0 {
		t.Fatalf("second run: %+v", got[key])
	}
	got, _ = migrate(t, root, true, testOpts())
	if r := got[key]; r.Action != Failed || !strings.Contains(r.Cause, "venue") {
		t.Fatalf("rollback over a full directory: %+v", r)
	}
	if _, ok := dbValues(t, filepath.Join(root, key)); !ok {
		t.Fatal("a failed rollback removed meta.db")
	}
	must(t, os.RemoveAll(venue))
	if got, _ := migrate(t, root, true, testOpts()); got[key].Action != Migrated {
		t.Fatalf("rollback after the directory went: %+v", got[key])
	}
	if b, err := os.ReadFile(venue); err != nil || string(b) != "(pending)" {
		t.Fatalf("venue %q, %v", b, err)
	}
}

// TestDirectoryWithEntriesAtALegacyTempOrLockName: like one at a
// sidecar's name, it held no value and is never removed. The dry run must
// not plan its removal, the run must not say it removed it, and a second
// run finds nothing left to do.
func TestDirectoryWithEntriesAtALegacyTempOrLockName(t *testing.T) {
	for _, name := range []string{"venue.incoming", "current.jsonl.4242.0.incoming", "lock"} {
		root, keys := newCorpus(t)
		key := keyNamed(keys, "plain")
		full := filepath.Join(root, key, name)
		must(t, os.MkdirAll(filepath.Join(full, "inside"), 0o700))
		old := testNow.Add(-2 * time.Hour) // a stale lock, as a lock
		must(t, os.Chtimes(full, old, old))
		planned, _ := migrate(t, root, false, Options{DryRun: true, Now: testOpts().Now})
		got, _ := migrate(t, root, false, testOpts())
		p, r := planned[key], got[key]
		if r.Action != Migrated || p.Action != r.Action || !slices.Equal(p.Removed, r.Removed) || slices.Contains(r.Removed, name) {
			t.Errorf("%s: planned %s %v, did %s %v", name, p.Action, p.Removed, r.Action, r.Removed)
		}
		said := false
		for _, o := range r.Oddities {
			if o.File == name && strings.Contains(o.ReadAs, "removed") {
				t.Errorf("%s: reported %+v", name, o)
			}
			said = said || o.File == name && o.Found == "a directory with entries" && strings.HasPrefix(o.ReadAs, "left in place")
		}
		if !said {
			// The report says what it left: a temp's directory was
			// left without a word by a mutant no test killed.
			t.Errorf("%s: oddities %+v; want the directory with entries reported left in place", name, r.Oddities)
		}
		if _, err := os.Lstat(filepath.Join(full, "inside")); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if again, _ := migrate(t, root, false, testOpts()); again[key].Action != Already || len(again[key].Removed) != 0 || again[key].Cause != "" {
			t.Errorf("%s: second run: %+v", name, again[key])
		}
	}
}

func TestWriteLegacySidecars(t *testing.T) {
	dir := t.TempDir()
	layKeyDir(t, dir, map[string]ent{"current.jsonl": file("x\n"), "context": file("1 2"), "venue.incoming": link("../victim")})
	victim := filepath.Join(filepath.Dir(dir), "victim")
	must(t, os.WriteFile(victim, []byte("untouched"), 0o600))
	kd, err := fsat.OpenDir(dir)
	must(t, err)
	defer kd.Close()
	pi, venue, chain := "", "podman", uint64(7)
	at := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	must(t, WriteLegacySidecars(kd, db.Sidecars{PiVersion: &pi, Venue: &venue, ResumeChain: &chain, Transcript: &db.Transcript{PromotedAt: at.UnixNano()}}))
	for name, want := range map[string]string{"pi-version": "", "venue": "podman", "resume-chain": "7"} {
		if b, err := os.ReadFile(filepath.Join(dir, name)); err != nil || string(b) != want {
			t.Errorf("%s = %q, %v; want %q", name, b, err, want)
		}
	}
	if _, err := os.Lstat(filepath.Join(dir, "context")); err == nil {
		t.Error("a nil context left the old context file")
	}
	if b, _ := os.ReadFile(victim); string(b) != "untouched" {
		t.Error("a link planted at a temp name was written through")
	}
	if fi, _ := os.Stat(filepath.Join(dir, "current.jsonl")); !fi.ModTime().Equal(at) {
		t.Errorf("transcript mtime %v, want %v", fi.ModTime(), at)
	}
	if names, _ := filepath.Glob(filepath.Join(dir, "*.incoming")); len(names) != 0 {
		t.Errorf("temps left: %v", names)
	}

	// Values the legacy reader would read back differently are refused
	// before anything is renamed.
	for _, sc := range []db.Sidecars{
		{PiVersion: ptr(" 0.80.7")},
		{PiVersion: &pi, Venue: ptr(strings.Repeat("v", 5000))},
		{PiVersion: &pi, ResumeChain: ptr(uint64(1<<53 + 1))},
		{PiVersion: &pi, Context: &db.Context{Tokens: 1, Window: 2, Model: "a model"}},
	} {
		before := treeState(t, dir, false, true) // a temp came and went: the dir mtime moves
		if err := WriteLegacySidecars(kd, sc); !errors.Is(err, ErrNotLegacy) {
			t.Errorf("%+v: %v", sc, err)
		}
		if d := diffStates(before, treeState(t, dir, false, true)); d != "" {
			t.Errorf("a refused write changed the dir:\n%s", d)
		}
	}
}

func ptr[T any](v T) *T { return &v }

func TestReportsComeInNameOrder(t *testing.T) {
	root, _ := newCorpus(t)
	var names []string
	calls, total := 0, 0
	opts := testOpts()
	opts.Workers = 4
	opts.Progress = func(done, n int) { calls, total = done, n }
	sum, err := ToDB(root, opts, func(r Report) error { names = append(names, r.Key); return nil })
	must(t, err)
	if !sort.StringsAreSorted(names) || len(names) != sum.Entries || calls != total || total != sum.Entries {
		t.Fatalf("%d reports (sorted %v), progress %d/%d, summary %+v", len(names), sort.StringsAreSorted(names), calls, total, sum)
	}

	stop := errors.New("stop")
	n := 0
	_, err = ToDB(root, opts, func(Report) error { n++; return stop })
	if !errors.Is(err, stop) || n != 1 {
		t.Fatalf("visit's error: %v after %d reports", err, n)
	}
	if _, err := ToDB(filepath.Join(root, "missing"), opts, func(Report) error { return nil }); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a missing root: %v", err)
	}
}

// A key dir whose meta.db check --repair moved aside, and that has no new
// one, is cold (meta-moved-aside) until an operator accepts it or a job
// promotes: migrate skips it, and leaves it cold, instead of making a
// meta.db from the stale legacy files beside it, which would resume it.
//
// The same with an empty meta.db beside the moved-aside one: the file a
// repair, a reap or a refused promotion makes only for the key's lock and
// removes again, left by a kill between the two, or brought back by a
// power cut (the removal is not fsynced). It holds no record, so the key
// is still one whose meta.db was moved aside.
func TestMovedAsideKeyIsSkipped(t *testing.T) {
	for _, lockDB := range []bool{false, true} {
		t.Run(fmt.Sprintf("empty-meta.db=%v", lockDB), func(t *testing.T) { testMovedAsideKeyIsSkipped(t, lockDB) })
	}
}

func testMovedAsideKeyIsSkipped(t *testing.T, lockDB bool) {
	root, keys := newCorpus(t)
	key := keyNamed(keys, "plain")
	must(t, os.WriteFile(filepath.Join(root, key, store.AsidePrefix+"20261201T000000Z"), []byte("damaged"), 0o600))
	if lockDB {
		withDB(t, filepath.Join(root, key), func(*db.DB) {})
	}
	st, err := store.New(root, store.Options{Now: func() time.Time { return testNow }})
	must(t, err)
	job := store.Job{PiVersion: testPi, Venue: "local"}
	if s, _ := st.Resolve(key, job, t.TempDir()); s.Resume || s.Reason != gates.MetaMovedAside {
		t.Fatalf("before the migration: %v %s", s.Resume, s.Reason)
	}
	for _, dry := range []bool{true, false} {
		opts := testOpts()
		opts.DryRun = dry
		got, _ := migrate(t, root, false, opts)
		if r := got[key]; r.Action != Skipped || !strings.Contains(r.Cause, "moved aside") {
			t.Fatalf("migrate (dry run %v): %+v, want skipped as moved aside", dry, r)
		}
	}
	if sc, ok := dbValues(t, filepath.Join(root, key)); ok && sc != (db.Sidecars{}) {
		t.Fatalf("migrate committed the stale legacy values beside the moved-aside meta.db: %s", fmtSidecars(sc))
	}
	if _, err := os.Lstat(filepath.Join(root, key, db.FileName)); !lockDB && !os.IsNotExist(err) {
		t.Fatalf("migrate made a meta.db beside the moved-aside one: %v", err)
	}
	if s, _ := st.Resolve(key, job, t.TempDir()); s.Resume || s.Reason != gates.MetaMovedAside {
		t.Fatalf("after the migration: %v %s, want still meta-moved-aside", s.Resume, s.Reason)
	}
}

// TestRollbackKeepsTheGenerationBeforeALostTemp: a promotion committed
// whose temp was lost before its rename leaves the generation before it in
// place, which the store serves (its pending entry's Prev). The rollback
// must carry that, not stamp the key "(pending)" as a replaced transcript:
// the key resumed before it and must resume after it. A temp that is there
// but damaged is the same once the rollback's roll-forward removed it.
func TestRollbackKeepsTheGenerationBeforeALostTemp(t *testing.T) {
	// The committed generation longer than the one before it, and shorter
	// (a rewrite): the one in place is read to its own size either way.
	for i, damaged := range []bool{false, true, false, true} {
		grow := int64(10)
		if i >= 2 {
			grow = -10
		}
		root := t.TempDir()
		keys := buildCorpus(t, root, "mixed")
		key := keyNamed(keys, "mixed")
		dir := filepath.Join(root, key)
		migrate(t, root, false, testOpts()) // leftovers gone: meta.db alone
		tmp := storeTempPrefix + "0123456789abcdef"
		if damaged {
			must(t, os.WriteFile(filepath.Join(dir, tmp), []byte("not what was committed"), 0o600))
		}
		withDB(t, dir, func(d *db.DB) {
			must(t, d.Update(func(tx *db.Tx) error {
				sc, err := tx.Sidecars()
				if err != nil {
					return err
				}
				prev := *sc.Transcript
				next := db.Transcript{Gen: prev.Gen + 1, Size: prev.Size + grow, CRC32C: 12345, PromotedAt: testNow.Add(-time.Hour).UnixNano()}
				if err := tx.PutTranscript(next); err != nil {
					return err
				}
				// The temp named here was never renamed into place.
				return tx.PutPending(&db.Pending{Tmp: tmp, Size: next.Size, CRC32C: next.CRC32C, Gen: next.Gen, Prev: &prev})
			}))
		})
		st, err := store.New(root, store.Options{Now: func() time.Time { return testNow }})
		must(t, err)
		job := store.Job{PiVersion: testPi, Venue: "local"}
		if s, _ := st.Resolve(key, job, t.TempDir()); !s.Resume {
			t.Fatalf("damaged %v, before the rollback: %v %s", damaged, s.Resume, s.Reason)
		}
		planned, _ := migrate(t, root, true, Options{DryRun: true, Now: testOpts().Now})
		got, _ := migrate(t, root, true, testOpts())
		if r := got[key]; r.Action != Migrated || *r.Values.Venue != "local" || fmtValues(*r.Values) != fmtValues(*planned[key].Values) {
			t.Fatalf("damaged %v, grown %d, rollback: %+v (planned %+v)", damaged, grow, r, planned[key])
		}
		if s, _ := st.Resolve(key, job, t.TempDir()); !s.Resume {
			t.Fatalf("damaged %v, after the rollback: %v %s", damaged, s.Resume, s.Reason)
		}
	}
}

// TestDryRunListsTheMetaTempsTheRunSweeps: a meta.db temp a killed run
// left (older than tempGrace, its flock free) is removed by the run; the
// dry run must list it among what it would remove, in both directions.
func TestDryRunListsTheMetaTempsTheRunSweeps(t *testing.T) {
	root, keys := newCorpus(t)
	key := keyNamed(keys, "plain")
	left := func() {
		p := filepath.Join(root, key, db.TempPrefix+"0123456789abcdef")
		must(t, os.WriteFile(p, []byte("half a meta.db"), 0o600))
		old := time.Now().Add(-2 * tempGrace)
		must(t, os.Chtimes(p, old, old))
	}
	dry := Options{DryRun: true, Now: testOpts().Now}
	for _, toLegacy := range []bool{false, true} {
		left()
		planned, _ := migrate(t, root, toLegacy, dry)
		did, _ := migrate(t, root, toLegacy, testOpts())
		if p, d := planned[key], did[key]; p.Action != d.Action || !slices.Equal(p.Removed, d.Removed) || !slices.Contains(d.Removed, db.TempPrefix+"0123456789abcdef") {
			t.Errorf("%s: planned %s %v, did %s %v", direction(toLegacy), p.Action, p.Removed, d.Action, d.Removed)
		}
	}
}

// TestTranscriptMtimeBeyondWhatMetaDBHolds: meta.db records a promotion
// time as int64 nanoseconds (years 1678 to 2262). A legacy transcript
// whose mtime is past that (a host clock gone wrong) is in the future for
// the TTL, and resumes; the migration must keep it so, there and back,
// and not wrap it into 1901, which is expired (and comes back as the
// transcript's mtime).
func TestTranscriptMtimeBeyondWhatMetaDBHolds(t *testing.T) {
	root, keys := newCorpus(t)
	key := keyNamed(keys, "plain")
	p := filepath.Join(root, key, "current.jsonl")
	far := testfs.Seconds(t, time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC).Unix())
	must(t, unix.UtimesNanoAt(unix.AT_FDCWD, p, []unix.Timespec{far, far}, unix.AT_SYMLINK_NOFOLLOW))
	st, err := store.New(root, store.Options{Now: func() time.Time { return testNow }, Bounds: gates.Bounds{TTL: 14 * 24 * time.Hour}})
	must(t, err)
	job := store.Job{PiVersion: testPi, Venue: "local"}
	judge := func(phase string) {
		t.Helper()
		if s, _ := st.Resolve(key, job, t.TempDir()); !s.Resume {
			t.Errorf("%s: %v %s", phase, s.Resume, s.Reason)
		}
	}
	judge("before")
	got, _ := migrate(t, root, false, testOpts())
	if r := got[key]; r.Action != Migrated || r.Values == nil || r.Values.Transcript == nil {
		t.Fatalf("migrate: %+v, no transcript recorded", r)
	} else if r.Values.Transcript.PromotedAt.Year() < 2262 || !slices.ContainsFunc(r.Oddities, func(o Oddity) bool { return o.File == "current.jsonl" }) {
		t.Errorf("migrate: %+v %s", r, fmtValues(*r.Values))
	}
	judge("after the migration")
	migrate(t, root, true, testOpts())
	judge("after the rollback")
	if fi, err := os.Stat(p); err != nil || fi.ModTime().Year() < 2262 {
		t.Errorf("the transcript's mtime came back as %v (%v)", fi.ModTime(), err)
	}
}
