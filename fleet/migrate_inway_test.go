package fleet

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sessdb/internal/etcdtest"
	"sessdb/migrate"
	"sessdb/store"
)

// A key whose name in the transcripts dir is taken by something that is
// not a directory (a link, a file: an operator's copy, a restore gone
// wrong) cannot take its generation file there: --to etcd's run fails
// the key when its write meets it, nothing written, the key dir left as
// it was. Its dry run planned "migrate" (exit 0) for the same key, a plan
// the run does not carry out. Both fail it alike now, saying the key's
// name is not a directory (it said "not a regular file", for a name where
// a directory is wanted).
func TestMigrateToEtcdDryRunOfAKeyNameTakenInTheTranscriptsDirFailsAsTheRun(t *testing.T) {
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	root := t.TempDir()
	h := newHostBuilder(t, root)
	// A first key moved marks the transcripts dir as the fleet's, as
	// any first write does.
	first := store.Key("github", "name-taken", "first")
	h.mustPromote(first, migJob, "f1", store.PromoteRequest{})
	if got, _ := runMigration(t, true, root, f.b, migOpts()); got[first].Action != migrate.Migrated {
		t.Fatalf("the first key's move into etcd: %+v", got[first])
	}
	elsewhere := t.TempDir()
	inTheWay := []struct {
		what string
		make func(path string) error
	}{
		{"a link to a directory", func(p string) error { return os.Symlink(elsewhere, p) }},
		{"a regular file", func(p string) error { return os.WriteFile(p, nil, 0o600) }},
	}
	dry := migOpts()
	dry.DryRun = true
	for _, c := range inTheWay {
		key := store.Key("github", "name-taken", c.what)
		h.mustPromote(key, migJob, "1", store.PromoteRequest{})
		if err := c.make(filepath.Join(f.dir, key)); err != nil {
			t.Fatal(err)
		}
		planned, _ := runMigration(t, true, root, f.b, dry)
		did, _ := runMigration(t, true, root, f.b, migOpts())
		p, r := planned[key], did[key]
		if r.Action != migrate.Failed || !strings.Contains(r.Cause, "not a directory") {
			t.Fatalf("%s at the key's name: the run did %s %q; want failed, saying the key's name is not a directory", c.what, r.Action, r.Cause)
		}
		if p.Action != r.Action || p.Cause != r.Cause {
			t.Errorf("%s at the key's name: the dry run planned %s %q; the run did %s %q; want both failed alike", c.what, p.Action, p.Cause, r.Action, r.Cause)
		}
		if st, err := f.b.meta.Get(context.Background(), key); err != nil || st.Rev != 0 {
			t.Errorf("%s at the key's name: etcd holds rev %d for the key (%v); want nothing", c.what, st.Rev, err)
		}
	}
	if names, err := os.ReadDir(elsewhere); err != nil || len(names) != 0 {
		t.Errorf("the directory the link names holds %v (%v); want nothing written through the link", names, err)
	}
}
