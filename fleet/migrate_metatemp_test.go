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

// A run killed while it made a new key dir's first meta.db leaves the key
// dir with that temp and no meta.db: the next run removes the temp (a
// minute old), and its dry run lists it as to be removed, as it lists the
// temp beside a meta.db. Before, the dry run said removed [] there, and the
// run then removed it.
func TestMigrateFromEtcdDryRunListsTheMetaDBTempOfAKeyDirWithNoMetaDB(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	key := store.Key("github", "acme/widget", "meta temp, no meta.db")
	f.run(key, "the fleet's")
	root := filepath.Join(t.TempDir(), "root")
	kd := filepath.Join(root, key)
	if err := os.MkdirAll(kd, 0o700); err != nil {
		t.Fatal(err)
	}
	old := db.TempPrefix + "0123456789abcdef"
	if err := os.WriteFile(filepath.Join(kd, old), make([]byte, 4096), 0o600); err != nil {
		t.Fatal(err)
	}
	at := time.Now().Add(-2 * time.Minute)
	if err := os.Chtimes(filepath.Join(kd, old), at, at); err != nil {
		t.Fatal(err)
	}
	for _, dry := range []bool{true, false} {
		opts := migOpts()
		opts.DryRun = dry
		got, _ := runMigration(t, false, root, f.b, opts)
		if r := got[key]; r.Action != migrate.Migrated || !slices.Equal(r.Removed, []string{old}) {
			t.Errorf("dry run %v: %+v; want migrate, removing %s", dry, r, old)
		}
		if _, err := os.Lstat(filepath.Join(kd, old)); dry == os.IsNotExist(err) {
			t.Errorf("dry run %v: the temp after it: %v", dry, err)
		}
	}
	if _, err := os.Lstat(filepath.Join(kd, db.FileName)); err != nil {
		t.Errorf("meta.db after the run: %v", err)
	}
}
