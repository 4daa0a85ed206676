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

// A meta.db temp a killed --from etcd left in a destination key dir (its
// creation of meta.db cut short) is removed by the next run under the
// key's lock once it is a minute old, and listed by its dry run, as
// migrate's other directions do; a younger one is left (it may be a
// creation under way). Before, the re-run said already and left it, and
// check reported the converged root's stray-temp (exit 3) until check
// --repair.
func TestMigrateFromEtcdSweepsAMetaDBTempAKilledRunLeft(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	key := store.Key("github", "acme/widget", "meta temp")
	f.run(key, "the fleet's")
	root := filepath.Join(t.TempDir(), "root")
	if got, _ := runMigration(t, false, root, f.b, migOpts()); got[key].Action != migrate.Migrated {
		t.Fatalf("the first run: %+v", got[key])
	}
	old, young := db.TempPrefix+"0123456789abcdef", db.TempPrefix+"fedcba9876543210"
	for _, n := range []string{old, young} {
		if err := os.WriteFile(filepath.Join(root, key, n), make([]byte, 4096), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	at := time.Now().Add(-2 * time.Minute)
	if err := os.Chtimes(filepath.Join(root, key, old), at, at); err != nil {
		t.Fatal(err)
	}
	for _, dry := range []bool{true, false} {
		opts := migOpts()
		opts.DryRun = dry
		got, _ := runMigration(t, false, root, f.b, opts)
		if r := got[key]; r.Action != migrate.Already || !slices.Equal(r.Removed, []string{old}) {
			t.Errorf("dry run %v: %+v; want already, removing %s alone", dry, r, old)
		}
	}
	if _, err := os.Lstat(filepath.Join(root, key, old)); !os.IsNotExist(err) {
		t.Errorf("the old temp after the run: %v; want it removed", err)
	}
	if _, err := os.Lstat(filepath.Join(root, key, young)); err != nil {
		t.Errorf("the young temp after the run: %v; want it left", err)
	}
}
