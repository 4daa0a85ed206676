package migrate

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
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
			tmp, run := temps[0], filepath.Join(filepath.Dir(root), "run")
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
