package fleet

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sessdb/internal/etcdtest"
	"sessdb/migrate"
	"sessdb/store"
)

// --from etcd brings a key dir forward to the generation the fleet
// promoted since, as a promotion writes: temp, commit (pending), rename.
// A directory at current.jsonl (empty or not) takes no rename: the run
// committed the fleet's generation as a promotion in flight, then failed
// the key on the rename ("is a directory"), and left that commit, which
// no roll-forward settles until the directory is gone; its dry run had
// planned "migrate" (brought forward), exit 0. Now the plan fails the key,
// dry run and run alike, naming current.jsonl, and nothing is written.
func TestMigrateFromEtcdOverADirectoryAtTheTranscriptFailsInThePlan(t *testing.T) {
	etcdtest.Beside(t)
	f := newFixture(t, etcdtest.Start1(t))
	root := filepath.Join(t.TempDir(), "sessions")
	h := newHostBuilder(t, root)
	keys := map[string]func(string) error{
		store.Key("github", "dir-at-transcript", "full"): func(p string) error {
			if err := os.Mkdir(p, 0o700); err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(p, "x"), nil, 0o600)
		},
		store.Key("github", "dir-at-transcript", "empty"): func(p string) error { return os.Mkdir(p, 0o700) },
	}
	for k := range keys {
		h.mustPromote(k, migJob, "h1", store.PromoteRequest{})
	}
	if _, sum := runMigration(t, true, root, f.b, migOpts()); sum.Migrated != len(keys) || !sum.Complete() {
		t.Fatalf("to etcd: %+v", sum)
	}
	f.now = migNow
	for k, put := range keys {
		f.run(k, "fleet 2") // the fleet promotes it since: --from etcd brings it forward
		cur := h.path(k, store.TranscriptName)
		if err := os.Remove(cur); err != nil {
			t.Fatal(err)
		}
		if err := put(cur); err != nil {
			t.Fatal(err)
		}
	}
	listing := func(k string) string {
		es, err := os.ReadDir(h.path(k))
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range es {
			info, _ := e.Info()
			out = append(out, e.Name()+" "+info.ModTime().String())
		}
		return strings.Join(out, ", ")
	}
	before := map[string]string{}
	for k := range keys {
		before[k] = listing(k)
	}
	dry := migOpts()
	dry.DryRun = true
	planned, _ := runMigration(t, false, root, f.b, dry)
	did, sum := runMigration(t, false, root, f.b, migOpts())
	for k := range keys {
		p, r := planned[k], did[k]
		if r.Action != migrate.Failed || !strings.Contains(r.Cause, h.path(k, store.TranscriptName)) {
			t.Errorf("%s: the run did %s %q; want failed, naming current.jsonl", k, r.Action, r.Cause)
		}
		if p.Action != r.Action || p.Cause != r.Cause {
			t.Errorf("%s: the dry run planned %s %q; the run did %s %q; want both failed alike", k, p.Action, p.Cause, r.Action, r.Cause)
		}
		if after := listing(k); after != before[k] {
			t.Errorf("%s: the key dir was\n\t%s\nand is\n\t%s\nwant nothing written", k, before[k], after)
		}
	}
	if sum.Complete() {
		t.Errorf("from etcd: %+v, want incomplete (exit 1)", sum)
	}
}
