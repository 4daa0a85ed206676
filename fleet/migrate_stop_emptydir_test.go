package fleet

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"sessdb/internal/etcdtest"
	"sessdb/migrate"
	"sessdb/store"
)

// A migration --to etcd stopped at a key's copy into the transcripts dir
// removes its temp but leaves the key's directory there, which its write
// made, empty: an rmdir by the run would race a writer about to create
// its file in it (a worker's first promotion of the key, another run),
// whose one retry is a reap's to take. Decided (ctx50 left it, fleet.md
// now says it): the dir stays; check reports nothing of it, a reap
// within the in-flight window leaves it, a reap past it sweeps it as the
// empty dir of a key with no record ("<key>/"), and a re-run, before or
// after, moves the key, one file in the dir.
func TestAMigrationStoppedAtItsCopyLeavesTheKeysDirEmptyForReap(t *testing.T) {
	c := etcdtest.Start1(t)
	for _, reapFirst := range []bool{false, true} {
		name := "re-run"
		if reapFirst {
			name = "reap, then re-run"
		}
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, c)
			key := store.Key("github", "migrate-stop-emptydir", name)
			root := promotedOnHost(t, key, "a")
			f.run(store.Key("github", "migrate-stop-emptydir", name+" other"), "other") // the dir's mark
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			f.b.hook = func(point, k string) error {
				if point == hookMigrateCopy && k == key {
					cancel()
				}
				return nil
			}
			sum, err := ToEtcd(ctx, root, f.b, migOpts(), nil)
			f.b.hook = nil
			if !errors.Is(err, context.Canceled) || !sum.Interrupted || sum.Entries != 0 {
				t.Fatalf("stopped at the copy: %+v, %v; want interrupted, the key not printed", sum, err)
			}
			kd := filepath.Join(f.dir, key)
			if names, err := os.ReadDir(kd); err != nil || len(names) != 0 {
				t.Fatalf("the key's dir in the transcripts dir after the stop: %v, %v; want it there, empty", names, err)
			}
			if _, err := f.b.Check(t.Context(), CheckOptions{}, func(fd store.Finding) error {
				if strings.Contains(fd.Path, key) {
					t.Errorf("check after the stop: %+v; want nothing of the key's empty dir", fd)
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			res, err := f.b.Reap(t.Context(), ReapOptions{})
			if err != nil || slices.Contains(res.Swept, key+"/") {
				t.Fatalf("a reap right after the stop: %+v, %v; want the empty dir kept (in flight)", res, err)
			}
			if reapFirst {
				old := time.Now().Add(-2 * time.Hour)
				if err := os.Chtimes(kd, old, old); err != nil {
					t.Fatal(err)
				}
				res, err := f.b.Reap(t.Context(), ReapOptions{})
				if err != nil || !slices.Contains(res.Swept, key+"/") {
					t.Fatalf("a reap once the dir is 2h old: %+v, %v; want %s/ swept", res, err, key)
				}
				if _, err := os.Lstat(kd); !os.IsNotExist(err) {
					t.Fatalf("the key's dir after the reap: %v; want it gone", err)
				}
			}
			again, _ := runMigration(t, true, root, f.b, migOpts())
			if r := again[key]; r.Action != migrate.Migrated {
				t.Fatalf("the re-run: %s (%s); want migrated", r.Action, r.Cause)
			}
			f.holds(key, "a", 1)
			if files := f.files(key); !slices.Equal(files, []string{f.recordFile(key)}) {
				t.Errorf("the key's files after the re-run: %v; want its record's alone", files)
			}
		})
	}
}
