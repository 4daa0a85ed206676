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

// As TestCheckWhoseDirGoesAwayUnderAKeysOrphanStops, for an entry the
// fleet does not write (a file an operator left in a key's directory)
// alone taken for gone: it tells the walk to look at the dir, which it
// finds gone, and stops naming it. Without that (45ba54f's look at what
// the entry is, its gone case not marking goneSince) the entry was
// dropped as swept since the listing and check returned nil, "0
// problems", having looked at nothing of the dir.
func TestCheckWhoseDirGoesAwayUnderAKeysOddEntryStops(t *testing.T) {
	etcdtest.Beside(t)
	f := newFixture(t, etcdtest.Start1(t))
	key := store.Key("github", "dir-away-odd", "x")
	f.run(key, "one")
	notes := filepath.Join(f.dir, key, "notes.txt")
	if err := os.WriteFile(notes, []byte("mine"), 0o600); err != nil {
		t.Fatal(err)
	}
	away, held := f.dir+".away", filepath.Join(t.TempDir(), "notes.txt")
	f.b.hook = func(p, _ string) error {
		if p == hookCheckDirListed {
			if err := os.Rename(notes, held); err != nil {
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
	if !errors.Is(err, shared.ErrDirUnavailable) || !strings.Contains(err.Error(), f.dir) {
		t.Errorf("check = %+v, %v; want it stopped naming the dir", finds, err)
	}
}
