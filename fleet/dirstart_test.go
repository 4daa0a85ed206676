package fleet

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"sessdb/fleet/shared"
	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// check and reap whose transcripts dir is gone (or a file at its name)
// before their listing of it stop with shared.ErrDirUnavailable, the
// error fleet.md quotes ("the transcripts dir is unavailable: stat DIR:
// ..."), as when it goes at any later step. Before: the listing's own
// open error ("open DIR: no such file or directory"), which says nothing
// of the storage and which no caller could tell from a fault.
func TestCheckAndReapWhoseDirIsGoneAtTheStartNameItUnavailable(t *testing.T) {
	etcdtest.Beside(t)
	f := newFixture(t, etcdtest.Start1(t))
	f.run(store.Key("github", "dir-away-start", "x"), "one")
	away := f.dir + ".away"
	for _, c := range []struct {
		name string
		make func()
	}{
		{"gone", func() {}},
		{"a file", func() { os.WriteFile(f.dir, []byte("x"), 0o600) }},
	} {
		if err := os.Rename(f.dir, away); err != nil {
			t.Fatal(err)
		}
		c.make()
		_, cerr := f.b.Check(context.Background(), CheckOptions{}, func(store.Finding) error { return nil })
		_, rerr := f.b.Reap(context.Background(), ReapOptions{Now: func() time.Time { return time.Now().Add(2 * time.Hour) }})
		os.Remove(f.dir)
		if err := os.Rename(away, f.dir); err != nil {
			t.Fatal(err)
		}
		if !errors.Is(cerr, shared.ErrDirUnavailable) || !errors.Is(rerr, shared.ErrDirUnavailable) {
			t.Errorf("%s: check = %v, reap = %v; want the dir unavailable", c.name, cerr, rerr)
		}
	}
}
