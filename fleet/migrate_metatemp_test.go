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

// A dry run of a key dir with no meta.db (a killed --from etcd made the
// dir, and its creation of meta.db was cut short) lists the temps the run
// removes there, as it lists them in a key dir with a meta.db: the run
// makes meta.db, then sweeps the promotion temps and the meta.db temps a
// minute old under its lock. Before, the dry run said migrated removing
// nothing, and the run removed both.
func TestMigrateFromEtcdDryRunOfAKeyDirWithNoMetaDBListsTheTempsTheRunRemoves(t *testing.T) {
	etcdtest.Beside(t)
	f := newFixture(t, etcdtest.Start1(t))
	key := store.Key("github", "acme/widget", "meta temp, no meta.db")
	f.run(key, "the fleet's")
	root := t.TempDir()
	kd := filepath.Join(root, key)
	if err := os.Mkdir(kd, 0o700); err != nil {
		t.Fatal(err)
	}
	meta, promo := db.TempPrefix+"0123456789abcdef", storeTempPrefix+"0123456789abcdef"
	at := time.Now().Add(-2 * time.Minute)
	for _, n := range []string{meta, promo} {
		if err := os.WriteFile(filepath.Join(kd, n), make([]byte, 4096), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(filepath.Join(kd, n), at, at); err != nil {
			t.Fatal(err)
		}
	}
	dry := migOpts()
	dry.DryRun = true
	planned, _ := runMigration(t, false, root, f.b, dry)
	done, _ := runMigration(t, false, root, f.b, migOpts())
	p, d := planned[key], done[key]
	want := []string{promo, meta}
	if d.Action != migrate.Migrated || !slices.Equal(d.Removed, want) {
		t.Fatalf("the run: %s %v; want migrated, removing %v", d.Action, d.Removed, want)
	}
	if p.Action != d.Action || !slices.Equal(p.Removed, d.Removed) {
		t.Errorf("the dry run said %s removing %v, the run did %s removing %v", p.Action, p.Removed, d.Action, d.Removed)
	}
}
