package migrate

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"sessdb/internal/faults"
	"sessdb/store"
)

// A committed promotion's temp that is not a regular file (a directory, a
// FIFO, a link: put there out of band) is given up on by a resolve, which
// serves the generation before it, and no roll-forward renames or removes
// it: the record stays pending, and the rollback cannot settle the key.
// The run fails the key saying so and what to do (before: "a pending
// promotion was not settled", every run), and its dry run fails it the
// same way (before: "migrate", exit 0, for a key every run failed). Once
// the temp is removed by hand, the rollback goes through and the key
// resumes what it resumed before.
func TestRollbackOfAPendingTempThatIsNotARegularFile(t *testing.T) {
	for name, put := range map[string]func(p, run string) error{
		"a directory":       func(p, _ string) error { return os.Mkdir(p, 0o700) },
		"a FIFO":            func(p, _ string) error { return unix.Mkfifo(p, 0o600) },
		"a link to its run": func(p, run string) error { return os.Symlink(run, p) },
	} {
		t.Run(name, func(t *testing.T) {
			root, key := oneKey(t)
			migrate(t, root, false, testOpts())
			tmp, run := committedNotRenamed(t, root, key), filepath.Join(filepath.Dir(root), "run")
			must(t, os.Rename(tmp, run)) // out of the root: the whole run, for the link
			must(t, put(tmp, run))
			before := verdictOf(t, root, key)
			tree := treeState(t, root, true, false)
			for _, dry := range []bool{true, false} {
				got, sum := migrate(t, root, true, Options{DryRun: dry, Now: testOpts().Now, LockTimeout: testOpts().LockTimeout})
				if r := got[key]; r.Action != Failed || !strings.Contains(r.Cause, tmp) || !strings.Contains(r.Cause, "not a regular file") || !strings.Contains(r.Cause, "remove it by hand") || sum.Complete() {
					t.Errorf("dry run %v: %s %q; want failed, naming the temp, that it is not a regular file, and to remove it by hand", dry, r.Action, r.Cause)
				}
			}
			if d := diffStates(tree, treeState(t, root, true, false)); d != "" {
				t.Errorf("the failed rollback changed the root:\n%s", d)
			}
			must(t, os.Remove(tmp))
			if got, _ := migrate(t, root, true, testOpts()); got[key].Action != Migrated {
				t.Fatalf("the rollback once the temp was removed: %+v", got[key])
			}
			if after := verdictOf(t, root, key); after != before {
				t.Errorf("resolve after the rollback: %s; before it: %s", after, before)
			}
		})
	}
}

// verdictOf is a local job's verdict of key: resume, reason, bytes.
func verdictOf(t *testing.T, root, key string) string {
	t.Helper()
	st, err := store.New(root, store.Options{Now: testOpts().Now})
	must(t, err)
	s, err := st.Resolve(key, store.Job{PiVersion: testPi, Venue: "local"}, t.TempDir())
	must(t, err)
	return fmt.Sprintf("resume %v, %s, %d bytes", s.Resume, s.Reason, s.Bytes)
}

// A committed promotion's temp that is a regular file but not what its
// commit recorded is removed by the rollback's roll-forward, which leaves
// the record pending: the rollback then carries the key as the store
// serves it (the generation before it in place resumes; another
// transcript stays cold, its venue stamped "(pending)"). The dry run
// planned the key as if the temp were to be renamed into place: for
// another transcript in place, a venue of "local" where the run writes
// "(pending)", and no word of either.
func TestRollbackDryRunOfADamagedPendingTempPlansWhatTheRunDoes(t *testing.T) {
	for name, put := range map[string]func(cur string) error{
		"the generation before it": func(string) error { return nil },
		"another transcript":       func(cur string) error { return os.WriteFile(cur, []byte(transcriptBytes(testNow)), 0o600) },
	} {
		t.Run(name, func(t *testing.T) {
			root, key := oneKey(t)
			migrate(t, root, false, testOpts())
			must(t, os.Truncate(committedNotRenamed(t, root, key), 100))
			must(t, put(filepath.Join(root, key, "current.jsonl")))
			// And a stray temp of an earlier promotion, which the
			// roll-forward sweeps: the dry run lists it as the run does.
			stray := storeTempPrefix + "0000000000000000"
			must(t, os.WriteFile(filepath.Join(root, key, stray), []byte("x"), 0o600))
			before := verdictOf(t, root, key)
			plan := func(r Report) string {
				if r.Values == nil {
					return fmt.Sprintf("%s %q", r.Action, r.Cause)
				}
				s := fmt.Sprintf("%s %s", r.Action, fmtValues(*r.Values))
				for _, o := range r.Oddities {
					s += fmt.Sprintf("; %s: %s", o.File, o.Found)
				}
				return s
			}
			planned, _ := migrate(t, root, true, Options{DryRun: true, Now: testOpts().Now})
			got, _ := migrate(t, root, true, testOpts())
			if p, d := plan(planned[key]), plan(got[key]); p != d || got[key].Action != Migrated {
				t.Errorf("the dry run planned\n\t%s\nthe run did\n\t%s", p, d)
			}
			if p, d := planned[key].Removed, got[key].Removed; !slices.Equal(p, d) || !slices.Contains(d, stray) {
				t.Errorf("the dry run lists %v removed, the run %v; want both to list the stray temp %s", p, d, stray)
			}
			// A cold start stays one (its reason the legacy layout's:
			// venue-changed for promotion-lost, as migration.md says).
			if after := verdictOf(t, root, key); strings.Split(after, ",")[0] != strings.Split(before, ",")[0] || strings.HasPrefix(before, "resume true") && after != before {
				t.Errorf("resolve after the rollback: %s; before it: %s", after, before)
			}
		})
	}
}

// A directory at current.jsonl under a committed promotion whose temp is
// whole: the rollback's roll-forward cannot rename the temp over it, and
// the run fails the key; the dry run, which rolls nothing forward,
// planned "migrate" (exit 0). It now fails the key with the run's error.
func TestRollbackDryRunOfAPromotionBlockedByADirectoryFailsAsTheRun(t *testing.T) {
	root, key := oneKey(t)
	migrate(t, root, false, testOpts())
	committedNotRenamed(t, root, key)
	cur := filepath.Join(root, key, "current.jsonl")
	must(t, os.Remove(cur))
	must(t, os.Mkdir(cur, 0o700))
	planned, _ := migrate(t, root, true, Options{DryRun: true, Now: testOpts().Now})
	got, _ := migrate(t, root, true, testOpts())
	p, r := planned[key], got[key]
	if p.Action != Failed || r.Action != Failed || p.Cause != r.Cause {
		t.Errorf("the dry run planned %s %q; the run did %s %q; want both failed alike", p.Action, p.Cause, r.Action, r.Cause)
	}
}

// committedNotRenamed runs a job on key whose promotion is killed between
// its commit and its rename, and returns the path of the temp meta.db
// records in flight.
func committedNotRenamed(t *testing.T, root, key string) string {
	t.Helper()
	st, sess, _ := raceJob(t, root, key)
	t.Cleanup(func() { faults.Set(nil) })
	faults.Set(func(p faults.Point) error {
		if p == faults.PromoteAfterCommit {
			return errors.New("killed between the commit and the rename")
		}
		return nil
	})
	if res, err := st.Promote(sess, store.PromoteRequest{PiVersion: testPi}); err == nil || res.Promoted {
		t.Fatalf("the promotion killed after its commit = %+v, %v", res, err)
	}
	faults.Set(nil)
	temps, _ := filepath.Glob(filepath.Join(root, key, storeTempPrefix+"*"))
	if len(temps) != 1 {
		t.Fatalf("temps %v", temps)
	}
	return temps[0]
}

// A record left pending by an earlier roll-forward that removed its
// damaged temp (the temp gone, so nothing is in flight) is not one this
// rollback rolled forward: with a stray temp beside it, which the
// rollback sweeps under its lock, the key is rolled back with no word of
// a roll-forward of its own.
func TestRollbackOfARecordLeftPendingSaysNoRollForward(t *testing.T) {
	root, key := oneKey(t)
	migrate(t, root, false, testOpts())
	tmp := committedNotRenamed(t, root, key)
	must(t, os.Truncate(tmp, 100))
	st, err := store.New(root, store.Options{Now: testOpts().Now, LockTimeout: testOpts().LockTimeout})
	must(t, err)
	if _, err := st.RollForward(key); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(tmp); !os.IsNotExist(err) {
		t.Fatalf("the damaged temp after the roll-forward: %v; want it removed", err)
	}
	stray := storeTempPrefix + "0000000000000000"
	must(t, os.WriteFile(filepath.Join(root, key, stray), []byte("x"), 0o600))
	got, _ := migrate(t, root, true, testOpts())
	r := got[key]
	if r.Action != Migrated {
		t.Fatalf("the rollback: %s %q; want migrated", r.Action, r.Cause)
	}
	for _, o := range r.Oddities {
		if strings.Contains(o.ReadAs, "roll-forward") || strings.Contains(o.ReadAs, "rolled forward") {
			t.Errorf("the rollback reported %+v; want no roll-forward of its own", o)
		}
	}
}
