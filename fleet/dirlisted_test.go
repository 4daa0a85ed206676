package fleet

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sessdb/fleet/shared"
	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// The transcripts dir going away after check listed a key's directory,
// before it looked at the entries (each lstat then fails: ESTALE over
// NFS), stops the walk naming the dir, as at every other step: its
// entries are not taken for gone one by one. Before: the key's orphan
// and its link were each taken for swept since the listing, dropped, and
// check, at its last entry, returned nil (exit 0, "0 problems") having
// looked at none of them.
func TestCheckWhoseDirGoesAwayAfterAKeysListingStops(t *testing.T) {
	f := newFixture(t, etcdtest.Start1(t))
	key := store.Key("github", "dir-away-listed", "x")
	f.run(key, "one")
	f.run(key, "two")
	if err := os.Symlink("/etc/passwd", filepath.Join(f.dir, key, "0000000000000009-0123456789abcdef.jsonl")); err != nil {
		t.Fatal(err)
	}
	// The stand-in for a stale export: the key dir's entries out of
	// reach of its open descriptor (held aside, to be put back), and the
	// dir itself gone from its path.
	away, held := f.dir+".away", t.TempDir()
	names := f.files(key)
	f.b.hook = func(p, _ string) error {
		if p == hookCheckDirListed {
			for _, n := range names {
				if err := os.Rename(filepath.Join(f.dir, n), filepath.Join(held, filepath.Base(n))); err != nil {
					t.Error(err)
				}
			}
			if err := os.Rename(f.dir, away); err != nil {
				t.Error(err)
			}
		}
		return nil
	}
	var finds []store.Finding
	_, err := f.b.Check(context.Background(), CheckOptions{Now: func() time.Time { return time.Now().Add(2 * time.Hour) }},
		func(x store.Finding) error { finds = append(finds, x); return nil })
	f.b.hook = nil
	if err := os.Rename(away, f.dir); err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if err := os.Rename(filepath.Join(held, filepath.Base(n)), filepath.Join(f.dir, n)); err != nil {
			t.Fatal(err)
		}
	}
	if !errors.Is(err, shared.ErrDirUnavailable) || !strings.Contains(err.Error(), f.dir) || len(finds) != 0 {
		t.Errorf("check = %+v, %v; want it stopped naming the dir, no finding", finds, err)
	}
}

// The same with an orphan alone among the key's files (its own file is
// not looked at again): the orphan taken for swept since the listing is
// what tells the walk to look at the dir, which it finds gone, and stops.
// Before (mutant d10 of the fleet sweep's list, orphan()'s `return true`
// for a file gone -> `return false`), the link above told it, and no
// test had an orphan alone: the mutant dropped the orphan and returned
// nil, "0 problems", having looked at nothing.
func TestCheckWhoseDirGoesAwayUnderAKeysOnlyOrphanStops(t *testing.T) {
	f := newFixture(t, etcdtest.Start1(t))
	key := store.Key("github", "dir-away-orphan", "x")
	f.run(key, "one")
	f.run(key, "two")
	away, held := f.dir+".away", t.TempDir()
	names := f.files(key)
	f.b.hook = func(p, _ string) error {
		if p == hookCheckDirListed {
			for _, n := range names {
				if err := os.Rename(filepath.Join(f.dir, n), filepath.Join(held, filepath.Base(n))); err != nil {
					t.Error(err)
				}
			}
			if err := os.Rename(f.dir, away); err != nil {
				t.Error(err)
			}
		}
		return nil
	}
	var finds []store.Finding
	_, err := f.b.Check(context.Background(), CheckOptions{Now: func() time.Time { return time.Now().Add(2 * time.Hour) }},
		func(x store.Finding) error { finds = append(finds, x); return nil })
	f.b.hook = nil
	if err := os.Rename(away, f.dir); err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if err := os.Rename(filepath.Join(held, filepath.Base(n)), filepath.Join(f.dir, n)); err != nil {
			t.Fatal(err)
		}
	}
	if !errors.Is(err, shared.ErrDirUnavailable) || !strings.Contains(err.Error(), f.dir) || len(finds) != 0 {
		t.Errorf("check = %+v, %v; want it stopped naming the dir, no finding", finds, err)
	}
}
