package fleet

import (
	"context"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"testing"

	"sessdb/internal/etcdtest"
	"sessdb/migrate"
	"sessdb/store"
)

// ToEtcd and FromEtcd, called through the Go API, refuse a transcripts
// dir that is the sessions root, or inside one of its key dirs, or
// inside it at a name that is no key (mutnew46's C18c), and a sessions
// root inside the transcripts dir: a *PlaceError saying which, dry run
// and run, before anything is read or written (no mark, no generation
// file, no record, no key dir). Before, only the CLI refused the first
// two: the library marked the dir and wrote the fleet's every generation
// file into the root it leaves as the way back (or the root's key dirs
// into the fleet's dir), and the last two were taken by the CLI too.
func TestMigrateRefusesATranscriptsDirInOrAroundTheRootThroughTheGoAPI(t *testing.T) {
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	key := store.Key("github", "acme/widget", "placed")
	root := filepath.Join(t.TempDir(), "root")
	newHostBuilder(t, root).mustPromote(key, migJob, "1", store.PromoteRequest{})
	inKey := filepath.Join(root, key, "transcripts", "deeper")
	inRoot := filepath.Join(root, "fleet")
	outer := t.TempDir()
	inner := filepath.Join(outer, "sessions")
	newHostBuilder(t, inner).mustPromote(key, migJob, "1", store.PromoteRequest{})
	for _, d := range []string{inKey, inRoot} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(root, link); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		root, dir string
		where     int
		entry     string // PlaceError's Key or Name
	}{
		{"the root itself", root, root, DirIsRoot, ""},
		{"a link to the root", root, link, DirIsRoot, ""},
		{"inside a key dir", root, inKey, DirInKeyDir, key},
		{"inside the root at no key", root, inRoot, DirInRoot, "fleet"},
		{"a root inside the dir", inner, outer, RootInDir, "sessions"},
		{"a root yet to be made inside the dir", filepath.Join(outer, "new", "root"), outer, RootInDir, "new"},
	} {
		b := f.open(func(cfg *Config) { cfg.TranscriptsDir = tc.dir })
		before, dirBefore := treeOf(t, tc.dir), treeOf(t, f.dir)
		for _, to := range []bool{true, false} {
			for _, dry := range []bool{true, false} {
				opts := migOpts()
				opts.DryRun = dry
				var err error
				if to {
					_, err = ToEtcd(context.Background(), tc.root, b, opts, nil)
				} else {
					_, err = FromEtcd(context.Background(), b, tc.root, opts, nil)
				}
				var pe *PlaceError
				if !errors.As(err, &pe) || pe.Where != tc.where || pe.Key+pe.Name != tc.entry {
					t.Errorf("%s: to etcd %v, dry run %v: %v; want a PlaceError %d at %q", tc.name, to, dry, err, tc.where, tc.entry)
				}
			}
		}
		if after := treeOf(t, tc.dir); !maps.Equal(after, before) {
			t.Errorf("%s: the transcripts dir changed: %v, was %v", tc.name, after, before)
		}
		if after := treeOf(t, f.dir); !maps.Equal(after, dirBefore) {
			t.Errorf("%s: the fleet's own dir changed", tc.name)
		}
		if _, err := os.Stat(filepath.Join(outer, "new")); err == nil {
			t.Errorf("%s: a refused run made the root", tc.name)
		}
	}
	if n := len(etcdOf(t, c, f.prefix)); n != 0 {
		t.Errorf("etcd holds %d keys after the refused runs", n)
	}
	// The fleet's own dir, apart from the root, takes the key.
	if got, _ := runMigration(t, true, root, f.b, migOpts()); got[key].Action != migrate.Migrated {
		t.Errorf("into the fleet's own dir: %+v", got[key])
	}
}
