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

// --from etcd failing after its commit (at the commit's fault point,
// after the rename, after the dir's fsync) into a root it made the key
// dir in keeps what it wrote: the meta.db its report names in written,
// holding the fleet's generation, which the next run finds already. Only
// a failure before the commit takes away what the run made. A run that
// took the committed meta.db away as well, once its commit's fault point
// failed, survived every test (mutnew47's MK04): the report said meta.db
// was written over a root without the key.
func TestMigrateFromEtcdFailedAfterItsCommitKeepsWhatItWrote(t *testing.T) {
	c := etcdtest.Start1(t)
	errFault := errors.New("injected")
	for _, p := range []faults.Point{faults.FromEtcdCommitted, faults.FromEtcdRenamed, faults.FromEtcdSynced} {
		f := newFixture(t, c)
		key := store.Key("github", "acme/widget", "failed after the commit")
		f.run(key, "the fleet's")
		root := filepath.Join(t.TempDir(), "root")
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
		r := got[key]
		if !fired || r.Action != migrate.Failed || !slices.Contains(r.Written, db.FileName) {
			t.Errorf("%s: fired %v: %+v; want failed, meta.db written", p, fired, r)
		}
		if st, err := os.Lstat(filepath.Join(root, key, db.FileName)); err != nil || st.Size() == 0 {
			t.Errorf("%s: meta.db after the run: %v; want the one its report names", p, err)
		}
		if got, _ := runMigration(t, false, root, f.b, migOpts()); got[key].Action != migrate.Already {
			t.Errorf("%s: the re-run: %+v; want already", p, got[key])
		}
	}
}
