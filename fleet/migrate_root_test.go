package fleet

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"golang.org/x/sys/unix"

	"sessdb/internal/etcdtest"
	"sessdb/migrate"
	"sessdb/store"
)

// migrate --from etcd makes its sessions root with durable.MkdirAll (it
// was os.MkdirAll): the root the operator names is followed where it is a
// link to a directory, as before, and a root that cannot be a directory
// (one of its components a file, the root itself a file, a link to
// nowhere) is an error that makes nothing, nowhere: not the root, not a
// key dir, not the link's target.
func TestMigrateFromEtcdMakesItsRootAsTheOperatorNamesIt(t *testing.T) {
	etcdtest.Beside(t)
	f := newFixture(t, etcdtest.Start1(t))
	key := store.Key("github", "root-migrate", "x")
	f.run(key, "one")
	parent := t.TempDir()
	p := func(n ...string) string { return filepath.Join(append([]string{parent}, n...)...) }

	t.Run("a link to a directory is followed", func(t *testing.T) {
		if err := os.Mkdir(p("real"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("real", p("linked")); err != nil {
			t.Fatal(err)
		}
		got, _ := runMigration(t, false, p("linked"), f.b, migOpts())
		if r := got[key]; r.Action != migrate.Migrated {
			t.Fatalf("report %+v; want migrated", r)
		}
		if st, err := os.Stat(p("real", key, store.TranscriptName)); err != nil || !st.Mode().IsRegular() {
			t.Errorf("the key's transcript in the link's target: %v", err)
		}
		if st, err := os.Lstat(p("linked")); err != nil || st.Mode()&os.ModeSymlink == 0 {
			t.Errorf("the link: %v, %v; want it left a link", st, err)
		}
	})

	if err := os.WriteFile(p("file"), []byte("mine\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("nowhere", p("dangling")); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		root  string
		errno unix.Errno // 0: any error
	}{
		"under a file":      {p("file", "sessions", "deeper"), unix.ENOTDIR},
		"a file":            {p("file"), unix.ENOTDIR},
		"a link to nowhere": {p("dangling"), 0},
	} {
		t.Run(name, func(t *testing.T) {
			before := listTree(t, parent)
			sum, err := FromEtcd(context.Background(), f.b, tc.root, migOpts(), func(r MigrateReport) error {
				t.Errorf("a key reported: %+v", r)
				return nil
			})
			if err == nil || (tc.errno != 0 && !errors.Is(err, tc.errno)) {
				t.Fatalf("FromEtcd = %+v, %v; want an error (%v)", sum, err, tc.errno)
			}
			t.Logf("FromEtcd: %v", err)
			if after := listTree(t, parent); !slices.Equal(before, after) {
				t.Errorf("the tree changed: before %q, after %q", before, after)
			}
			if b, err := os.ReadFile(p("file")); err != nil || string(b) != "mine\n" {
				t.Errorf("the file: %q, %v", b, err)
			}
		})
	}
}

// listTree names every entry under dir (links not followed), with its kind.
func listTree(t *testing.T, dir string) []string {
	t.Helper()
	var names []string
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		names = append(names, path+" "+d.Type().String())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return names
}
