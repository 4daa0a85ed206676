package migrate

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"sessdb/db"
	"sessdb/internal/durable/powercut"
	"sessdb/internal/faults"
	"sessdb/internal/fsat"
	"sessdb/store"
)

// What migrate takes away besides the legacy files stays away once the
// run has returned, after a power cut too: a meta.db a failed key's plan
// made for its lock (the key is left as it was: TestPowerCutToDB cuts only
// runs that succeed), and a meta.db temp a killed run left, which the run
// reports removed. Each removal is made durable by a directory fsync of
// its own; without it every other power-cut test passes.
func TestWhatARunTakesAwayStaysAwayAfterAPowerCut(t *testing.T) {
	t.Run("a failed key's meta.db", func(t *testing.T) {
		root, key := oneKey(t)
		opts := testOpts()
		j := powercut.New()
		opts.disk = j
		t.Cleanup(func() { faults.Set(nil) })
		faults.Set(migrateOnly(func(p faults.Point) error {
			if p == faults.ToDBLocked {
				return errInjected
			}
			return nil
		}))
		reports, _ := migrate(t, root, false, opts)
		faults.Set(nil)
		if r := reports[key]; r.Action != Failed {
			t.Fatalf("the run reported %+v, want the key failed", r)
		}
		if _, err := os.Lstat(filepath.Join(root, key, db.FileName)); !os.IsNotExist(err) {
			t.Fatalf("the failed key's meta.db is still there: %v", err)
		}
		for _, im := range j.Images(t, filepath.Dir(root)) {
			if _, err := os.Lstat(filepath.Join(sessionsIn(im), key, db.FileName)); !os.IsNotExist(err) {
				t.Errorf("cut after the run returned (%s, lost %v): the meta.db the failed plan made is back (%v)", im.Mode, im.Lost, err)
			}
		}
	})
	t.Run("a stopped run's meta.db", func(t *testing.T) {
		// A stop (Ctrl-C) while the plan reads the transcript: the key is
		// left as it was, the meta.db its open made taken away again.
		root, key := oneKey(t)
		p := filepath.Join(root, key, "current.jsonl")
		st, err := os.Stat(p)
		must(t, err)
		must(t, os.Truncate(p, 4*readChunk)) // more than one chunk: the read sees the stop
		must(t, os.Chtimes(p, st.ModTime(), st.ModTime()))
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		countReads(t, cancel)
		opts := testOpts()
		j := armDB(t, powercut.New())
		opts.disk = j
		if sum, err := ToDBContext(ctx, root, opts, func(Report) error { return nil }); !errors.Is(err, context.Canceled) || !sum.Interrupted {
			t.Fatalf("the run stopped mid-read: %+v, %v; want it interrupted", sum, err)
		}
		if _, err := os.Lstat(filepath.Join(root, key, db.FileName)); !os.IsNotExist(err) {
			t.Fatalf("the stopped key's meta.db is still there: %v", err)
		}
		for _, im := range j.Images(t, filepath.Dir(root)) {
			if _, err := os.Lstat(filepath.Join(sessionsIn(im), key, db.FileName)); !os.IsNotExist(err) {
				t.Errorf("cut after the run returned (%s, lost %v): the meta.db the stopped plan made is back (%v)", im.Mode, im.Lost, err)
			}
		}
	})
	t.Run("a meta.db made in a key dir moved aside", func(t *testing.T) {
		// check --quarantine moves the key dir aside (a rename and its
		// root's fsync, through the journal) once the plan's open has made
		// meta.db, before it has its lock: the dir moved aside is left as
		// the quarantine left it, the meta.db the open made taken away.
		root, key := oneKey(t)
		opts := testOpts()
		j := armDB(t, powercut.New())
		opts.disk = j
		rd, err := fsat.OpenDir(root)
		must(t, err)
		defer rd.Close()
		aside := store.QuarantinePrefix + key + "-20261101T120000Z"
		made := false
		t.Cleanup(func() { faults.Set(nil) })
		faults.Set(func(p faults.Point) error {
			if p != faults.DBOpenBeforeLock || made {
				return nil
			}
			if _, err := os.Lstat(filepath.Join(root, key, db.FileName)); err != nil {
				return err
			}
			made = true
			if err := j.Rename(rd, key, aside); err != nil {
				return err
			}
			return j.SyncDir(rd)
		})
		reports, _ := migrate(t, root, false, opts)
		faults.Set(nil)
		if r := reports[key]; !made || r.Action != Skipped || r.Cause != vanishedCause {
			t.Fatalf("the run reported %+v (meta.db made before the move: %v), want the key skipped, %s", r, made, vanishedCause)
		}
		if _, err := os.Lstat(filepath.Join(root, aside, db.FileName)); !os.IsNotExist(err) {
			t.Fatalf("the meta.db the plan made is still in the dir moved aside: %v", err)
		}
		for _, im := range j.Images(t, filepath.Dir(root)) {
			if _, err := os.Lstat(filepath.Join(sessionsIn(im), aside, db.FileName)); !os.IsNotExist(err) {
				t.Errorf("cut after the run returned (%s, lost %v): the meta.db the plan made in the dir moved aside is back (%v)", im.Mode, im.Lost, err)
			}
		}
	})
	t.Run("a meta.db temp swept", func(t *testing.T) {
		root, key := oneKey(t)
		tmp := db.TempPrefix + "00000000000000aa"
		p := filepath.Join(root, key, tmp)
		must(t, os.WriteFile(p, []byte("a killed run's creation"), 0o600))
		old := time.Now().Add(-time.Hour) // past tempGrace, by the wall clock
		must(t, os.Chtimes(p, old, old))
		opts := testOpts()
		j := powercut.New()
		opts.disk = j
		reports, _ := migrate(t, root, false, opts)
		if r := reports[key]; r.Action != Migrated || !slices.Contains(r.Removed, tmp) {
			t.Fatalf("the run reported %+v, want the key migrated and %s removed", r, tmp)
		}
		for _, im := range j.Images(t, filepath.Dir(root)) {
			if _, err := os.Lstat(filepath.Join(sessionsIn(im), key, tmp)); !os.IsNotExist(err) {
				t.Errorf("cut after the run returned (%s, lost %v): %s, reported removed, is back (%v)", im.Mode, im.Lost, tmp, err)
			}
		}
	})
}
