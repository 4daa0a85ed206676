package fleet

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"sessdb/fleet/internal/sharedfs"
	"sessdb/gates"
	"sessdb/internal/durable/powercut"
	"sessdb/internal/fsat"
	"sessdb/store"
)

// migrate --from etcd that finds a key's dir in the sessions root, or the
// root itself, made by another writer just now (a host's first promotion,
// a second run, descheduled between its mkdir and the fsync of the dir it
// made it in), and writes the key into it, reports the key migrated only
// once every name on its path is durable: a power cut after the run
// returned must leave the key resuming the generation the run reported.
// Before, the run fsynced the root only after a mkdir of its own, and the
// root's parent only after making the root itself: the plain cut took the
// key dir, or the root, and the migrated key with it.
func TestAKeyMigratedFromEtcdIntoAnotherWritersNewDirSurvivesAPowerCut(t *testing.T) {
	for _, made := range []string{"key dir", "root"} {
		t.Run(made, func(t *testing.T) {
			f, parent := powerFixture(t)
			root := filepath.Join(parent, "s")
			key := store.Key("github", "powercut", "rival")
			f.run(key, "a")
			j := powercut.New()
			restore := sharedfs.Use(j)
			in, name := parent, "s"
			if made == "key dir" {
				if err := os.Mkdir(root, 0o700); err != nil {
					t.Fatal(err)
				}
				in, name = root, key
			}
			otherWritersMkdir(t, j, in, name)
			_, sum := runMigration(t, false, root, f.b, migOpts())
			restore()
			if !sum.Complete() || sum.Migrated != 1 {
				t.Fatalf("migrate --from etcd: %+v; want the key migrated", sum)
			}
			for _, im := range j.Images(t, parent) {
				host, err := store.New(filepath.Join(im.Dir, "s"), store.Options{Bounds: gates.Bounds{TTL: 14 * 24 * time.Hour}})
				if err != nil {
					t.Fatal(err)
				}
				sess, jobDir := resolveOn(t, host, key)
				if m := markers(stagedOf(t, jobDir)); !sess.Resume || len(m) != 1 || m[0] != "a" {
					t.Errorf("a cut after the run returned (%s, lost %v): the root resolves the key {resume %v, %s, %v}; want generation 1 (\"a\") whole: the run reported it migrated", im.Mode, im.Lost, sess.Resume, sess.Reason, m)
				}
			}
		})
	}
}

// otherWritersMkdir makes name in dir through the journal, as another
// writer does, and leaves it without the fsync of dir that follows.
func otherWritersMkdir(t *testing.T, j *powercut.Journal, dir, name string) {
	t.Helper()
	d, err := fsat.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if made, err := j.Mkdir(d, name, 0o700); err != nil || !made {
		t.Fatalf("the other writer's mkdir: %v %v", made, err)
	}
}
