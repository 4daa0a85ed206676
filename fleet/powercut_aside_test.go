package fleet

import (
	"os"
	"path/filepath"
	"testing"

	"sessdb/db"
	"sessdb/fleet/internal/sharedfs"
	"sessdb/internal/durable/dbseam"
	"sessdb/internal/durable/powercut"
	"sessdb/internal/faults"
	"sessdb/internal/fsat"
	"sessdb/migrate"
	"sessdb/store"
)

// migrate --from etcd into an empty key dir makes meta.db there for its
// lock; when check --quarantine moved the dir aside meanwhile (a rename
// and the root's fsync), the migration leaves the dir moved aside as the
// quarantine left it, and takes away the meta.db its open made, durably:
// a power cut once the run returned does not bring it back into the
// quarantine dir. (The journal could not book what is done in a dir
// moved: the removal failed under it, and no test held its fsync.)
func TestAMetaDBMadeInADirMovedAsideStaysGoneAfterAPowerCut(t *testing.T) {
	f, parent := powerFixture(t)
	root := filepath.Join(parent, "s")
	key := store.Key("github", "powercut", "aside")
	f.run(key, "a")
	if err := os.MkdirAll(filepath.Join(root, key), 0o700); err != nil {
		t.Fatal(err)
	}
	rd, err := fsat.OpenDir(root)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	j := powercut.New()
	restore := sharedfs.Use(j)
	defer restore()
	dbseam.Set(j)
	t.Cleanup(func() { dbseam.Set(nil) })
	aside := store.QuarantinePrefix + key + "-20261101T120000Z"
	made := false
	t.Cleanup(func() { faults.Set(nil) })
	faults.Set(func(p faults.Point) error {
		if p != faults.DBOpenBeforeLock || made {
			return nil
		}
		if _, err := os.Lstat(filepath.Join(root, key, db.FileName)); err != nil {
			return err
		}
		made = true
		if err := j.Rename(rd, key, aside); err != nil {
			return err
		}
		return j.SyncDir(rd)
	})
	reports := map[string]MigrateReport{}
	_, err = FromEtcd(t.Context(), f.b, root, migOpts(), func(r MigrateReport) error { reports[r.Key] = r; return nil })
	faults.Set(nil)
	dbseam.Set(nil)
	if r := reports[key]; err != nil || !made || r.Action != migrate.Failed {
		t.Fatalf("migrate --from etcd: %+v, %v (meta.db made before the move: %v); want the key failed", r, err, made)
	}
	if _, err := os.Lstat(filepath.Join(root, aside, db.FileName)); !os.IsNotExist(err) {
		t.Fatalf("the meta.db the migration made is still in the dir moved aside: %v", err)
	}
	for _, im := range j.Images(t, parent) {
		if _, err := os.Lstat(filepath.Join(im.Dir, "s", aside, db.FileName)); !os.IsNotExist(err) {
			t.Errorf("cut after the run returned (%s, lost %v): the meta.db the migration made in the dir moved aside is back (%v)", im.Mode, im.Lost, err)
		}
	}
}
