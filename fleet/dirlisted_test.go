package fleet

import (
	"context"
	"errors"
	"fmt"
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
	etcdtest.Beside(t)
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

// The same where the orphan alone is taken for gone: with nothing else
// among the key's files (its own file is not looked at again), or with
// an entry after it that is still there (a link, its lstat through the
// key dir's descriptor answered). The orphan taken for swept since the
// listing is what tells the walk to look at the dir, which it finds gone,
// and stops; an entry found after it does not undo that. Before (mutants
// d10 and d12 of the fleet sweep's list: orphan()'s `return true` for a
// file gone -> `return false`; `goneSince = c.special(...) || goneSince`
// without `|| goneSince`), the link of the test above, gone too, told
// the walk, and no test had the orphan alone gone: each mutant dropped
// the orphan and returned nil, having looked at nothing of the dir.
func TestCheckWhoseDirGoesAwayUnderAKeysOrphanStops(t *testing.T) {
	etcdtest.Beside(t)
	for _, link := range []bool{false, true} {
		t.Run(fmt.Sprintf("link=%v", link), func(t *testing.T) {
			f := newFixture(t, etcdtest.Start1(t))
			key := store.Key("github", "dir-away-orphan", "x")
			f.run(key, "one")
			gen1 := f.recordFile(key)
			f.run(key, "two")
			if link {
				if err := os.Symlink("/etc/passwd", filepath.Join(f.dir, key, "0000000000000009-0123456789abcdef.jsonl")); err != nil {
					t.Fatal(err)
				}
			}
			away, held := f.dir+".away", filepath.Join(t.TempDir(), "orphan")
			f.b.hook = func(p, _ string) error {
				if p == hookCheckDirListed {
					if err := os.Rename(filepath.Join(f.dir, gen1), held); err != nil {
						t.Error(err)
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
			if err := os.Rename(held, filepath.Join(f.dir, gen1)); err != nil {
				t.Fatal(err)
			}
			if !errors.Is(err, shared.ErrDirUnavailable) || !strings.Contains(err.Error(), f.dir) {
				t.Errorf("check = %+v, %v; want it stopped naming the dir", finds, err)
			}
		})
	}
}
