package migrate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sessdb/db"
	"sessdb/internal/fsat"
	"sessdb/store"
)

// A dry run's plan is what the run does (issue 4: --dry-run prints the
// plan). A stamp the legacy reader would read back otherwise (it trims
// white space, reads an empty or oversized file as no value) cannot be
// rolled back: the run fails the key, and so must the dry run's plan,
// before anything is written, as it does for a chain or a context the
// legacy format cannot carry.
//
// A venue over 4096 bytes, which the store refuses now
// (store.ErrValueTooLong), is stamped as a sessdb before it could stamp
// one: into meta.db, after the promotion.
func TestDryRunRollbackFailsTheStampsTheRunRefuses(t *testing.T) {
	for name, job := range map[string]store.Job{
		"pi-version with a leading space": {PiVersion: " " + testPi, Venue: "local"},
		"venue with a trailing space":     {PiVersion: testPi, Venue: "local "},
		"venue over 4096 bytes":           {PiVersion: testPi, Venue: "local", ID: "restamp"},
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
			if job.ID == "restamp" {
				kd, err := fsat.OpenDir(filepath.Join(root, key))
				must(t, err)
				defer kd.Close()
				d, err := db.OpenWriter(kd, filepath.Join(root, key, db.FileName), db.Options{})
				must(t, err)
				must(t, d.Update(func(tx *db.Tx) error { return tx.PutVenue(strings.Repeat("v", 5000)) }))
				must(t, d.Close())
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
