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

// migrate --from etcd with the transcripts dir gone (the export went
// away) fails each key naming the dir, never "the generation the record
// names is gone ... (the fleet cold-starts it as transcript-replaced)":
// the generation is whole on the export, and a resolve now says
// store-unavailable. Nothing is written into the root. Before: each key
// was reported as its own generation lost.
func TestMigrateFromEtcdWithTheDirGoneNamesTheDir(t *testing.T) {
	etcdtest.Beside(t)
	f := newFixture(t, etcdtest.Start1(t))
	key := store.Key("github", "dir-away-migrate", "x")
	f.run(key, "one")
	away := f.dir + ".away"
	if err := os.Rename(f.dir, away); err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	got, _ := runMigration(t, false, root, f.b, MigrateOptions{})
	if err := os.Rename(away, f.dir); err != nil {
		t.Fatal(err)
	}
	r := got[key]
	if r.Action != migrate.Failed || !strings.Contains(r.Cause, "the transcripts dir is unavailable") || !strings.Contains(r.Cause, f.dir) ||
		strings.Contains(r.Cause, "transcript-replaced") {
		t.Errorf("report %+v; want failed, naming the dir", r)
	}
	if _, err := os.Lstat(filepath.Join(root, key)); !os.IsNotExist(err) {
		t.Errorf("the key dir: %v; want nothing written", err)
	}
}
