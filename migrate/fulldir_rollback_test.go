package migrate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A directory with entries where the rollback puts or removes a legacy
// file (a sidecar's name, or the temp of one it writes) is never removed,
// so the rollback cannot go through. The plan finds it: the run fails the
// key before anything is written, naming the directory, and the dry run
// fails it too, as migration.md says. Before, the dry run planned
// "migrate" (exit 0) for a key its run then failed (exit 1), and the run
// had renamed the files before it into place when it met the directory.
func TestRollbackOverADirectoryWithEntriesFailsInThePlan(t *testing.T) {
	for _, name := range []string{"pi-version", "venue", "context", "venue.incoming", "resume-chain.incoming", "context.incoming"} {
		t.Run(name, func(t *testing.T) {
			root, key := oneKey(t)
			migrate(t, root, false, testOpts())
			full := filepath.Join(root, key, name)
			must(t, os.MkdirAll(filepath.Join(full, "inside"), 0o700))
			before := treeState(t, root, true, false)
			planned, sum := migrate(t, root, true, Options{DryRun: true, Now: testOpts().Now})
			if r := planned[key]; r.Action != Failed || !strings.Contains(r.Cause, full) || sum.Complete() {
				t.Errorf("dry run: %s %q (complete %v); want failed naming %s, as the run", r.Action, r.Cause, sum.Complete(), full)
			}
			got, _ := migrate(t, root, true, testOpts())
			if r := got[key]; r.Action != Failed || !strings.Contains(r.Cause, full) {
				t.Errorf("run: %s %q; want failed naming %s", r.Action, r.Cause, full)
			}
			if d := diffStates(before, treeState(t, root, true, false)); d != "" {
				t.Errorf("the failed rollback changed the key dir:\n%s", d)
			}
			must(t, os.RemoveAll(full))
			if got, _ := migrate(t, root, true, testOpts()); got[key].Action != Migrated {
				t.Errorf("rollback once the directory went: %+v", got[key])
			}
		})
	}
}
