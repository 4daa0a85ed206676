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

// A committed promotion's temp that is not a regular file (here a
// directory put at its name) is one no roll-forward renames or removes:
// the record stays pending, and neither --to etcd nor --from etcd can
// settle the key. Each fails it saying so and what to do, its dry run
// too, and changes nothing. Before: the runs said "a pending promotion was
// not settled"; --to etcd's dry run blamed current.jsonl ("is not a
// regular file"), and --from etcd's called the key a conflict.
func TestMigrateAPendingTempThatIsNotARegularFileFailsSayingSo(t *testing.T) {
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	root := t.TempDir()
	h := newHostBuilder(t, root)
	key := store.Key("github", "odd-temp", "a")
	h.mustPromote(key, migJob, "a1", store.PromoteRequest{})
	if got, _ := runMigration(t, true, root, f.b, migOpts()); got[key].Action != migrate.Migrated {
		t.Fatalf("the key's first move into etcd: %+v", got[key])
	}
	h.crashAfterCommit(key, migJob, "a2")
	temps, _ := filepath.Glob(h.path(key, storeTempPrefix+"*"))
	if len(temps) != 1 {
		t.Fatalf("temps %v", temps)
	}
	if err := os.Remove(temps[0]); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(temps[0], 0o700); err != nil {
		t.Fatal(err)
	}
	entries := func() string {
		names, err := os.ReadDir(h.path(key))
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range names {
			out = append(out, e.Name())
		}
		return strings.Join(out, " ")
	}
	before, inEtcd := entries(), len(etcdOf(t, c, f.prefix))
	for _, to := range []bool{true, false} {
		for _, dry := range []bool{true, false} {
			opts := migOpts()
			opts.DryRun = dry
			got, sum := runMigration(t, to, root, f.b, opts)
			if r := got[key]; r.Action != migrate.Failed || !strings.Contains(r.Cause, temps[0]) || !strings.Contains(r.Cause, "not a regular file") || !strings.Contains(r.Cause, "remove it by hand") || sum.Complete() {
				t.Errorf("to etcd %v, dry run %v: %s %q; want failed, naming the temp, that it is not a regular file, and to remove it by hand", to, dry, r.Action, r.Cause)
			}
		}
	}
	if after := entries(); after != before {
		t.Errorf("the key dir after the failed runs: %s; before: %s", after, before)
	}
	if n := len(etcdOf(t, c, f.prefix)); n != inEtcd {
		t.Errorf("etcd holds %d keys after the failed runs, %d before", n, inEtcd)
	}
}
