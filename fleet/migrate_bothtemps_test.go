package fleet

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"sessdb/db"
	"sessdb/internal/etcdtest"
	"sessdb/migrate"
	"sessdb/store"
)

// A destination key dir holding both kinds of debris a killed --from etcd
// leaves, a promotion temp and an old meta.db temp, has both removed by
// the next run and listed by it and by its dry run: the list names every
// removal, not the last sweep's. 8dab289's test had a meta.db temp alone,
// so a sweep whose list replaced the promotion temps' (mutants F11, F12)
// passed it.
func TestMigrateFromEtcdListsEveryTempItSweeps(t *testing.T) {
	etcdtest.Beside(t)
	f := newFixture(t, etcdtest.Start1(t))
	key := store.Key("github", "acme/widget", "both temps")
	f.run(key, "the fleet's")
	root := filepath.Join(t.TempDir(), "root")
	if got, _ := runMigration(t, false, root, f.b, migOpts()); got[key].Action != migrate.Migrated {
		t.Fatalf("the first run: %+v", got[key])
	}
	promotion, meta := storeTempPrefix+"0123456789abcdef", db.TempPrefix+"0123456789abcdef"
	for _, n := range []string{promotion, meta} {
		if err := os.WriteFile(filepath.Join(root, key, n), make([]byte, 4096), 0o600); err != nil {
			t.Fatal(err)
		}
		at := time.Now().Add(-2 * time.Minute)
		if err := os.Chtimes(filepath.Join(root, key, n), at, at); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{promotion, meta}
	for _, dry := range []bool{true, false} {
		opts := migOpts()
		opts.DryRun = dry
		got, _ := runMigration(t, false, root, f.b, opts)
		if r := got[key]; r.Action != migrate.Already || !slices.Equal(r.Removed, want) {
			t.Errorf("dry run %v: %+v; want already, removing %q", dry, r, want)
		}
	}
	for _, n := range want {
		if _, err := os.Lstat(filepath.Join(root, key, n)); !os.IsNotExist(err) {
			t.Errorf("%s after the run: %v; want it removed", n, err)
		}
	}
}
