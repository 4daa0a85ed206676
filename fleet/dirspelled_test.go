package fleet

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"sessdb/fleet/etcdmeta"
	"sessdb/fleet/shared"
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

// A fleet whose transcripts dir is what failed (Unreachable, the dir
// unavailable) names in its ID where the dir's path leads, as an open
// Backend does, so that its tickets are this fleet's; where a part of the
// path cannot be looked at (a loop of links here; ESTALE, EIO on a dead
// export), the path made absolute, and never an error: the job still gets
// its store-unavailable cold start.
func TestAnUnreachableDirsIDIsWhereItsPathLeads(t *testing.T) {
	base := t.TempDir()
	real := filepath.Join(base, "real")
	if err := os.Mkdir(real, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, l := range [][2]string{{real, "link"}, {filepath.Join(base, "loop"), "loop"}} {
		if err := os.Symlink(l[0], filepath.Join(base, l[1])); err != nil {
			t.Fatal(err)
		}
	}
	for spelled, want := range map[string]string{
		filepath.Join(base, "link"):         real,
		filepath.Join(base, "loop", "dir"):  filepath.Join(base, "loop", "dir"),
		filepath.Join(base, "link", "away"): filepath.Join(real, "away"),
	} {
		cfg := Config{Config: etcdmeta.Config{Endpoints: []string{"http://127.0.0.1:1"}, Prefix: "/sessdb"}, TranscriptsDir: spelled}
		u, err := Unreachable(cfg, shared.ErrDirUnavailable)
		if err != nil {
			t.Errorf("%s: %v", spelled, err)
			continue
		}
		if id, _ := u.ID(); id != want+idSep+"/sessdb)" {
			t.Errorf("%s: ID %q; want it to name %s", spelled, id, want)
		}
	}
}

// A transcripts dir whose name is not valid UTF-8 gives the fleet no ID
// (store.ErrRootNotUTF8), as a sessions root's does, so that Resolve
// refuses the job before it makes anything. Before, the ticket named the
// dir as JSON text, which carried it back with U+FFFD in place of the
// bad byte: every promote of every job on such a fleet was
// store.ErrWrongRoot, and no run was ever promoted. The CLI refuses such
// a dir itself (exit 2); a Go worker's fleet.Open took it.
func TestAFleetWhoseTranscriptsDirIsNotUTF8ResolvesNothing(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tx\xff")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	cfg := Config{Config: etcdmeta.Config{Endpoints: []string{"http://127.0.0.1:1"}, Prefix: "/sessdb"}, TranscriptsDir: dir}
	b, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	u, err := Unreachable(cfg, etcdmeta.ErrUnavailable)
	if err != nil {
		t.Fatal(err)
	}
	key := store.Key("github", "not-utf8", "x")
	for name, backend := range map[string]store.Backend{"opened": b, "unreachable": u} {
		if _, err := backend.ID(); !errors.Is(err, store.ErrRootNotUTF8) {
			t.Errorf("%s: ID: %v; want store.ErrRootNotUTF8", name, err)
		}
		jobDir := filepath.Join(t.TempDir(), "job")
		if _, err := store.NewOn(backend, store.Options{}).Resolve(key, store.Job{PiVersion: "0.58.3", Venue: "local"}, jobDir); !errors.Is(err, store.ErrRootNotUTF8) {
			t.Errorf("%s: Resolve: %v; want store.ErrRootNotUTF8", name, err)
		}
		if _, err := os.Lstat(jobDir); !os.IsNotExist(err) {
			t.Errorf("%s: the job dir: %v; want nothing made", name, err)
		}
	}
}
