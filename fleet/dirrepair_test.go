package fleet

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"sessdb/fleet/shared"
	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// check --repair whose transcripts dir goes away between its judging an
// orphan and its removal (the export went stale) removed nothing, and
// says so: the walk stops naming the dir, as reap's sweep does, the
// orphan reported not removed, none counted repaired. Before: the
// removal's "no such file" (ESTALE over NFS) was taken for another
// reaper's, and the orphan reported "removed", counted repaired, though
// it was still there once the dir was back.
func TestCheckRepairWhoseDirGoesAwayRemovesNothingItReports(t *testing.T) {
	etcdtest.Beside(t)
	f := newFixture(t, etcdtest.Start1(t))
	key := store.Key("github", "dir-away-repair", "x")
	f.run(key, "one")
	gen1 := f.recordFile(key)
	f.run(key, "two")
	away := f.dir + ".away"
	f.b.hook = func(p, _ string) error {
		if p == hookRepair {
			if err := os.Rename(f.dir, away); err != nil {
				t.Error(err)
			}
		}
		return nil
	}
	var finds []store.Finding
	sum, err := f.b.Check(context.Background(), CheckOptions{Repair: true, Now: func() time.Time { return time.Now().Add(2 * time.Hour) }},
		func(x store.Finding) error { finds = append(finds, x); return nil })
	f.b.hook = nil
	if err := os.Rename(away, f.dir); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(err, shared.ErrDirUnavailable) || !strings.Contains(err.Error(), f.dir) {
		t.Errorf("check --repair = %v; want it stopped, naming the dir", err)
	}
	for _, x := range finds {
		if x.Repaired || !x.Remains || x.Path == gen1 && !strings.HasPrefix(x.Repair, "not removed") {
			t.Errorf("finding %+v; want the orphan not removed, and said so", x)
		}
	}
	if sum.Repaired != 0 {
		t.Errorf("summary %+v; want nothing repaired", sum)
	}
	if files := f.files(key); !slices.Contains(files, gen1) {
		t.Errorf("files %v; want the orphan %s still there", files, gen1)
	}
}
