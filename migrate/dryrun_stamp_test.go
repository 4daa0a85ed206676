package migrate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sessdb/store"
)

// A dry run's plan is what the run does (issue 4: --dry-run prints the
// plan). A stamp the legacy reader would read back otherwise (it trims
// white space, reads an empty or oversized file as no value) cannot be
// rolled back: the run fails the key, and so must the dry run's plan,
// before anything is written, as it does for a chain or a context the
// legacy format cannot carry.
func TestDryRunRollbackFailsTheStampsTheRunRefuses(t *testing.T) {
	for name, job := range map[string]store.Job{
		"pi-version with a leading space": {PiVersion: " " + testPi, Venue: "local"},
		"venue with a trailing space":     {PiVersion: testPi, Venue: "local "},
		"venue over 4096 bytes":           {PiVersion: testPi, Venue: strings.Repeat("v", 5000)},
	} {
		t.Run(name, func(t *testing.T) {
			root := filepath.Join(t.TempDir(), "sessions")
			st, err := store.New(root, store.Options{Now: func() time.Time { return testNow }})
			must(t, err)
			key := store.Key("github", "acme/widget", "pi/issue-1")
			jobDir := t.TempDir()
			sess, err := st.Resolve(key, job, jobDir)
			must(t, err)
			must(t, os.WriteFile(filepath.Join(jobDir, "session", "current.jsonl"), []byte(transcriptBytes(testNow)), 0o600))
			if res, err := st.Promote(sess, store.PromoteRequest{PiVersion: job.PiVersion}); err != nil || !res.Promoted {
				t.Fatalf("promote: %+v %v", res, err)
			}
			opts := testOpts()
			opts.DryRun = true
			before := treeState(t, root, true, true)
			plan, _ := migrate(t, root, true, opts)
			if d := diffStates(before, treeState(t, root, true, true)); d != "" {
				t.Fatalf("the dry run changed the root:\n%s", d)
			}
			ran, _ := migrate(t, root, true, testOpts())
			if ran[key].Action != Failed {
				t.Fatalf("the rollback: %+v, want failed", ran[key])
			}
			if plan[key].Action != ran[key].Action {
				t.Errorf("the dry run planned %q, the run did %q (%s)", plan[key].Action, ran[key].Action, ran[key].Cause)
			}
		})
	}
}
