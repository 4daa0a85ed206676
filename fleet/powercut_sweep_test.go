package fleet

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"sessdb/fleet/internal/sharedfs"
	"sessdb/internal/durable/powercut"
	"sessdb/store"
)

// migrate --from etcd sweeps a key dir's promotion temps (a killed
// promotion's debris) under the key's lock, and reports them removed:
// they stay gone once the run has returned, after a power cut too. Where
// the key is then written, its temp's directory fsync makes the sweep
// durable as well; where it is already at the fleet's generation, only
// the sweep's own fsync does, and without it every other power-cut test
// passes (none plants a temp).
func TestATempMigrateFromEtcdSweptStaysGoneAfterAPowerCut(t *testing.T) {
	f, parent := powerFixture(t)
	root := filepath.Join(parent, "s")
	key := store.Key("github", "powercut", "swept")
	f.run(key, "a")
	if sum, err := FromEtcd(t.Context(), f.b, root, migOpts(), nil); err != nil || sum.Migrated != 1 {
		t.Fatalf("the first migrate --from etcd: %+v, %v", sum, err)
	}
	tmp := ".current.jsonl.tmp-00000000000000aa"
	if err := os.WriteFile(filepath.Join(root, key, tmp), []byte("a killed promotion's"), 0o600); err != nil {
		t.Fatal(err)
	}
	j := powercut.New()
	restore := sharedfs.Use(j)
	reports, sum := runMigration(t, false, root, f.b, migOpts())
	restore()
	if r := reports[key]; sum.Already != 1 || !slices.Contains(r.Removed, tmp) {
		t.Fatalf("migrate --from etcd reported %+v (%+v); want the key already there and %s removed", r, sum, tmp)
	}
	for _, im := range j.Images(t, parent) {
		if _, err := os.Lstat(filepath.Join(im.Dir, "s", key, tmp)); !os.IsNotExist(err) {
			t.Errorf("cut after the run returned (%s, lost %v): %s, reported removed, is back (%v)", im.Mode, im.Lost, tmp, err)
		}
	}
}
