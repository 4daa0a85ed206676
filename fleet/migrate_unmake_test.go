package fleet

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"sessdb/db"
	"sessdb/internal/etcdtest"
	"sessdb/internal/faults"
	"sessdb/migrate"
	"sessdb/store"
)

// --from etcd failing before its commit (under the key's lock, or at its
// temp) takes away what it made for the key: the meta.db its open made
// for the lock, and the key dir its mkdir made; a key dir that was there
// before (empty) stays, without a meta.db. The report's empty written is
// then what is so, and a re-run migrates the key. Before, a key dir
// holding an empty meta.db was left, with written [].
func TestMigrateFromEtcdFailedBeforeItsCommitLeavesNothingItMade(t *testing.T) {
	c := etcdtest.Start1(t)
	errFault := errors.New("injected")
	for _, p := range []faults.Point{faults.FromEtcdLocked, faults.FromEtcdTemp} {
		for _, there := range []bool{false, true} {
			f := newFixture(t, c)
			key := store.Key("github", "acme/widget", "failed before the commit")
			f.run(key, "the fleet's")
			root := filepath.Join(t.TempDir(), "root")
			if there {
				if err := os.MkdirAll(filepath.Join(root, key), 0o700); err != nil {
					t.Fatal(err)
				}
			}
			fired := false
			faults.Set(func(q faults.Point) error {
				if q == p && !fired {
					fired = true
					return errFault
				}
				return nil
			})
			got, _ := runMigration(t, false, root, f.b, migOpts())
			faults.Set(nil)
			if r := got[key]; !fired || r.Action != migrate.Failed || len(r.Written) != 0 {
				t.Errorf("%s, key dir there %v: fired %v: %+v; want failed, nothing written", p, there, fired, r)
			}
			var want []string
			if there {
				want = []string{key}
			}
			if got := dirNames(t, root); !slices.Equal(got, want) {
				t.Errorf("%s, key dir there %v: the root holds %q; want %q", p, there, got, want)
			}
			if _, err := os.Lstat(filepath.Join(root, key, db.FileName)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s, key dir there %v: meta.db: %v; want none", p, there, err)
			}
			if got, _ := runMigration(t, false, root, f.b, migOpts()); got[key].Action != migrate.Migrated {
				t.Errorf("%s, key dir there %v: the re-run: %+v; want migrated", p, there, got[key])
			}
		}
	}
}

// dirNames is dir's entries' names, in order.
func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}
