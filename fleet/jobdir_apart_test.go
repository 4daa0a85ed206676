package fleet

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"sessdb/fleet/etcdmeta"
	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// On a fleet the store's directory is the transcripts dir: a job dir that
// is it, lies inside a key's dir in it, or holds it is refused before
// anything is made, by a Backend and by the one that stands in for a
// fleet etcd does not answer (Unreachable). A job dir beside it resolves.
func TestAJobDirThatIsInOrHoldsTheTranscriptsDirIsRefused(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	key := store.Key("github", "apart", "x")
	f.run(key, "one")
	keyDir := filepath.Join(f.dir, key)
	if _, err := os.Stat(keyDir); err != nil {
		t.Fatalf("the key's dir in the transcripts dir: %v", err)
	}
	cfg := Config{Config: etcdmeta.Config{Endpoints: []string{"http://127.0.0.1:1"}, Prefix: f.prefix}, TranscriptsDir: f.dir}
	u, err := Unreachable(cfg, etcdmeta.ErrUnavailable)
	if err != nil {
		t.Fatal(err)
	}
	down := store.NewOn(u, store.Options{})
	for name, s := range map[string]*store.Store{"a Backend": f.s, "Unreachable's": down} {
		for _, jobDir := range []string{f.dir, keyDir, filepath.Join(keyDir, "job"), filepath.Dir(f.dir)} {
			names := f.files(key)
			if _, err := s.Resolve(key, store.Job{PiVersion: "0.58.3", Venue: "local"}, jobDir); !errors.Is(err, store.ErrJobDirInStore) {
				t.Errorf("%s, job dir %s: %v, want ErrJobDirInStore", name, jobDir, err)
			}
			if _, err := os.Stat(filepath.Join(keyDir, "job")); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("%s: a refused resolve made its job dir in the key's dir: %v", name, err)
			}
			if got := f.files(key); len(got) != len(names) {
				t.Fatalf("%s: the key's files went from %v to %v", name, names, got)
			}
		}
	}
	if sess, _ := resolveOn(t, f.s, key); !sess.Resume {
		t.Fatalf("a job dir beside the transcripts dir: %+v, want resumed", sess)
	}
	f.holds(key, "one", 1)
}
