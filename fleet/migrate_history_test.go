package fleet

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"sessdb/internal/etcdtest"
	"sessdb/migrate"
	"sessdb/store"
	"sessdb/store/transcript"
)

// TestMigrateBackKeepsTheFleetsRefusals: a refusal the fleet recorded on
// a key it holds at the generation the key dir holds (no promotion since)
// is a history entry the key dir lacks; brought back into its own root,
// the key must keep it, and a second run then finds nothing to do.
func TestMigrateBackKeepsTheFleetsRefusals(t *testing.T) {
	f := newFixture(t, etcdtest.Start1(t))
	root := t.TempDir()
	h := newHostBuilder(t, root)
	key := store.Key("github", "own", "refused")
	h.mustPromote(key, migJob, "h1", store.PromoteRequest{})
	runMigration(t, true, root, f.b, migOpts())

	sess, _ := f.job(key, "unanswered")
	res, err := f.s.Promote(sess, store.PromoteRequest{PiVersion: testJob.PiVersion, Require: transcript.Answered})
	if err != nil || res.Promoted {
		t.Fatalf("the fleet's promotion was not refused: %+v, %v", res, err)
	}
	st, err := f.b.meta.Get(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	want := st.History[len(st.History)-1]
	if want.Outcome == "" {
		t.Fatalf("the fleet recorded no refusal: %+v", st.History)
	}

	reports, sum := runMigration(t, false, root, f.b, migOpts())
	if r := reports[key]; !sum.Complete() || r.Action == migrate.Failed {
		t.Fatalf("from etcd: %s (%s)", r.Action, r.Cause)
	}
	_, hist := hostState(t, filepath.Join(root, key))
	if len(hist) != len(st.History) || hist[len(hist)-1].Outcome != want.Outcome || hist[len(hist)-1].At != want.At {
		t.Errorf("the key dir's history is %+v, the fleet's %+v", hist, st.History)
	}
	if again, _ := runMigration(t, false, root, f.b, migOpts()); again[key].Action != migrate.Already {
		t.Errorf("second run: %s (%s)", again[key].Action, again[key].Cause)
	}
}

// TestMigrateBackDryRunListsTheTempsItSweeps: a promotion temp a killed
// FromEtcd left in a key dir is removed by the run, which says so in
// Removed; the dry run must list it too.
func TestMigrateBackDryRunListsTheTempsItSweeps(t *testing.T) {
	f := newFixture(t, etcdtest.Start1(t))
	root := t.TempDir()
	h := newHostBuilder(t, root)
	key := store.Key("github", "own", "temp")
	h.mustPromote(key, migJob, "h1", store.PromoteRequest{})
	runMigration(t, true, root, f.b, migOpts())
	f.run(key, "fleet 2")
	tmp := ".current.jsonl.tmp-0123456789abcdef"
	if err := os.WriteFile(filepath.Join(root, key, tmp), []byte("half a copy"), 0o600); err != nil {
		t.Fatal(err)
	}
	dry := migOpts()
	dry.DryRun = true
	planned, _ := runMigration(t, false, root, f.b, dry)
	done, _ := runMigration(t, false, root, f.b, migOpts())
	if p, d := planned[key], done[key]; p.Action != d.Action || !slices.Equal(p.Removed, d.Removed) || !slices.Contains(d.Removed, tmp) {
		t.Errorf("the dry run said %s %v, the run did %s %v", p.Action, p.Removed, d.Action, d.Removed)
	}
}
