package store

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sessdb/gates"
)

// A dry run says of a reap-owned dir a promotion landed in what the reap
// would do with it: restore it where the key's name is free or an empty
// directory, and fail it (ErrReapedKeyExists, exit 1) where the key's name
// is taken by anything else. It listed every such dir as one it would
// restore, and exited 0, where the reap then failed it.
func TestReapDryRunSaysWhatARestoreWouldDo(t *testing.T) {
	for _, c := range []struct {
		name     string
		atKey    func(t *testing.T, path string) // nil: nothing at the key
		restored bool
	}{
		{"nothing at the key", nil, true},
		{"an empty dir", func(t *testing.T, p string) { mustMkdir(t, p) }, true},
		{"a dir with a file", func(t *testing.T, p string) {
			mustMkdir(t, p)
			if err := os.WriteFile(filepath.Join(p, "x"), nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"a link to an empty dir", func(t *testing.T, p string) {
			if err := os.Symlink(t.TempDir(), p); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"a file", func(t *testing.T, p string) {
			if err := os.WriteFile(p, nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, root, _ := newTestStore(t, gates.Bounds{})
			key := Key("a", "b", "dry restore")
			runJob(t, s, key, localJob(), PromoteRequest{}, "landed")
			aside := ReapedPrefix + key + "-00000000000000ee"
			if err := os.Rename(keyDirPath(root, key), filepath.Join(root, aside)); err != nil {
				t.Fatal(err)
			}
			if c.atKey != nil {
				c.atKey(t, keyDirPath(root, key))
			}
			dry, res := dryRunThenReap(t, s, root)
			if c.restored {
				if !slices.Equal(res.Restored, []string{aside}) || len(res.Failed) != 0 {
					t.Fatalf("reap = %+v; want %s restored", res, aside)
				}
			} else if len(res.Restored) != 0 || !slices.Equal(res.Failed, []string{aside}) || !strings.Contains(res.Skipped[aside], ErrReapedKeyExists.Error()) {
				t.Fatalf("reap = %+v; want %s failed with ErrReapedKeyExists", res, aside)
			}
			if !slices.Equal(dry.Restored, res.Restored) || !slices.Equal(dry.Failed, res.Failed) || dry.Skipped[aside] != res.Skipped[aside] {
				t.Fatalf("dry run: restored %v, failed %v %q; the reap: restored %v, failed %v %q",
					dry.Restored, dry.Failed, dry.Skipped[aside], res.Restored, res.Failed, res.Skipped[aside])
			}
		})
	}
}

// dryRunThenReap reaps s's root dry, wants the tree as it was, then reaps
// it: what each said, for a test to hold the one to the other.
func dryRunThenReap(t *testing.T, s *Store, root string) (dry, res ReapResult) {
	t.Helper()
	before := treeState(t, root)
	dry, err := s.Reap(true)
	if err != nil {
		t.Fatal(err)
	}
	if treeState(t, root) != before {
		t.Fatal("a dry run changed the tree")
	}
	if res, err = s.Reap(false); err != nil {
		t.Fatal(err)
	}
	return dry, res
}
