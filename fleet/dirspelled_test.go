package fleet

import (
	"os"
	"path/filepath"
	"testing"

	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// A transcripts dir is taken where the system takes it: a ".." after a
// link is the parent of the link's target. Cleaned (filepath.Abs),
// base/link/../ named base's own parent, another directory: a worker so
// configured wrote its fleet's files there, and resolved none of the
// fleet's conversations.
func TestATranscriptsDirSpelledThroughALinkAndDotDotIsTheOneTheSystemReaches(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	key := store.Key("github", "spelled", "x")
	f.run(key, "one")

	// base/link leads to f.dir/sub, so base/link/.. is f.dir; cleaned,
	// it is base.
	sub := filepath.Join(f.dir, "sub")
	if err := os.Mkdir(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	base := t.TempDir()
	if err := os.Symlink(sub, filepath.Join(base, "link")); err != nil {
		t.Fatal(err)
	}
	spelled := filepath.Join(base, "link") + "/.."
	b := f.open(func(cfg *Config) { cfg.TranscriptsDir = spelled })
	want, _ := os.Stat(f.dir)
	if got, err := os.Stat(b.Dir()); err != nil || !os.SameFile(got, want) {
		t.Errorf("the Backend of %s works in %s (%v), not in %s", spelled, b.Dir(), err, f.dir)
	}
	if sess, _ := resolveOn(t, store.NewOn(b, store.Options{}), key); !sess.Resume {
		t.Errorf("a resolve through %s: %+v; want the fleet's conversation resumed", spelled, sess)
	}
	if names, _ := os.ReadDir(base); len(names) != 1 {
		t.Errorf("%s holds %d names; want the link alone, nothing of the fleet's", base, len(names))
	}
}
