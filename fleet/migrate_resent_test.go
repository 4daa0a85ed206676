package fleet

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
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
	etcdtest.Beside(t)
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

// A migration's create that landed, its answer a context error, and a
// fleet promotion onto the record it made before etcd's client sent the
// create again (its backoff is ~25 ms): the second try's conflict shows
// the promotion's record, which names the new generation's file, not the
// create's. The create is still the run's: the record's history holds
// the key dir's newest entry, which the create carried and only a
// migration of this key dir writes (its lock is held from the read to
// the create). The key is migrated, and the generation it made, now
// superseded, is kept as every superseded generation is (reap's once
// --grace has passed, for a resolve still copying it). A key dir migrated
// from the legacy layout has no history to tell by: its file is kept all the same, as after a
// try unanswered here. Before, the create took the record for another
// writer's in both: it removed that file at once, and reported the key
// already moved ("the fleet has promoted it since").
func TestAMigrationCreateSentAgainAfterAPromotionOnTopKeepsItsFile(t *testing.T) {
	c := etcdtest.Start(t, etcdtest.Options{Members: 1, InProcess: true})
	for _, legacy := range []bool{false, true} {
		t.Run(map[bool]string{false: "with its history", true: "legacy"}[legacy], func(t *testing.T) {
			f := newFixture(t, c)
			key := randHex(16)
			root := promotedOnHost(t, key, "host")
			if legacy {
				// To the legacy layout and back: a meta.db with the
				// record and no history, as a key migrated from a
				// legacy sessdb has until its next promotion.
				for _, to := range []func(string, migrate.Options, func(migrate.Report) error) (migrate.Summary, error){migrate.ToLegacy, migrate.ToDB} {
					if _, err := to(root, migrate.Options{}, func(migrate.Report) error { return nil }); err != nil {
						t.Fatal(err)
					}
				}
				if sc, h := hostState(t, filepath.Join(root, key)); sc.Transcript == nil || len(h) != 0 {
					t.Fatalf("the key dir migrated back: %+v and %d history entries, want a record and none", sc, len(h))
				}
			}
			jobDir := t.TempDir()
			// Runs on the member's goroutine, after the create took
			// effect: no t.Fatal here.
			var created string
			var onTop store.PromoteResult
			var onTopErr error
			promoteOnTop := func() {
				st, err := f.b.meta.GetRecord(context.Background(), key)
				if err != nil || st.Record.Transcript == nil {
					onTopErr = fmt.Errorf("the created record: %+v, %v", st, err)
					return
				}
				created = st.Record.Transcript.File
				sess, err := f.s.Resolve(key, testJob, jobDir)
				if err != nil || !sess.Resume {
					onTopErr = fmt.Errorf("resolve on the created record: %+v, %v", sess, err)
					return
				}
				p := filepath.Join(jobDir, store.StagedDirName, store.TranscriptName)
				data, err := os.ReadFile(p)
				if err == nil {
					err = os.WriteFile(p, append(data, markerLine("fleet")...), 0o600)
				}
				if err != nil {
					onTopErr = err
					return
				}
				onTop, onTopErr = f.promote(sess)
			}
			t.Cleanup(func() { c.LoseNextAs(resentTxn, 0, 0, codes.DeadlineExceeded) })
			faults.Set(func(p faults.Point) error {
				if p == faults.ToEtcdWritten {
					c.LoseNextAsAfter(resentTxn, 0, 1, codes.DeadlineExceeded, promoteOnTop)
				}
				return nil
			})
			t.Cleanup(func() { faults.Set(nil) })
			got, _ := runMigration(t, true, root, f.b, MigrateOptions{})
			faults.Set(nil)
			if onTopErr != nil || !onTop.Promoted || onTop.Gen != 2 {
				t.Fatalf("the promotion on top of the created record = %+v, %v; want gen 2 (the key %+v)", onTop, onTopErr, got[key])
			}
			r := got[key]
			switch {
			case !legacy && r.Action != migrate.Migrated:
				t.Errorf("the key = %s (%s), want migrated", r.Action, r.Cause)
			case legacy && r.Action != migrate.Migrated && r.Action != migrate.Already:
				t.Errorf("the legacy key = %s (%s), want migrated or already", r.Action, r.Cause)
			}
			if _, err := os.Lstat(filepath.Join(f.dir, created)); err != nil {
				t.Errorf("the generation the migration made, superseded by the promotion, went at once: %v", err)
			}
			// What the transcripts dir holds of this run is what its report
			// says it wrote, whichever way the key was judged (json.md's
			// written: a file kept for an already key too).
			if !slices.Contains(r.Written, created) {
				t.Errorf("the key = %s, written %q: the file the run made and kept, %s, is not named", r.Action, r.Written, created)
			}
			f.holds(key, "fleet", 2)
		})
	}
}
