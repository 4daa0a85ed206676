package fleet

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// The files of a key with no record whose history does not decode are
// no record's, as reap's sweep judges them (the record alone, read again
// where the history does not decode): check --repair removes them too,
// once past the in-flight window and the grace. Before, the repair left
// each "not removed: the key's record or history does not decode", every
// run, while reap removed them: check and reap judged one file two ways.
// The history's finding is left to the operator, as before.
func TestARepairRemovesTheFilesOfADamagedHistoryWithNoRecordAsReapDoes(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	for _, by := range []string{"check --repair", "reap"} {
		t.Run(strings.ReplaceAll(by, " ", ""), func(t *testing.T) {
			f := newFixture(t, c)
			key := store.Key("github", "damaged-stray", by)
			var files []string
			for _, m := range []string{"one", "two"} {
				f.run(key, m)
				files = append(files, f.recordFile(key))
			}
			cli := c.Client(t)
			if _, err := cli.Delete(t.Context(), f.prefix+"/record/"+key); err != nil {
				t.Fatal(err)
			}
			if _, err := cli.Put(t.Context(), f.prefix+"/history/"+key+"/0000000000000003", "\xc1 not msgpack"); err != nil {
				t.Fatal(err)
			}
			old := time.Now().Add(-40 * time.Minute)
			for _, file := range files {
				if err := os.Chtimes(filepath.Join(f.dir, file), old, old); err != nil {
					t.Fatal(err)
				}
			}
			var swept []string
			if by == "reap" {
				res, err := f.b.Reap(context.Background(), ReapOptions{Grace: time.Second})
				if err != nil {
					t.Fatal(err)
				}
				swept = res.Swept
			} else {
				found := map[string]store.Finding{}
				var damage []store.Finding // the history's: its damage, and its notice
				if _, err := f.b.Check(context.Background(), CheckOptions{Grace: time.Second, Repair: true}, func(fd store.Finding) error {
					found[fd.Path] = fd
					if fd.Kind == store.KindRecordUndecodable {
						damage = append(damage, fd)
					}
					return nil
				}); err != nil {
					t.Fatal(err)
				}
				for _, file := range files {
					if fd := found[file]; fd.Kind != KindOrphan || !fd.Repaired || fd.Repair != "removed" {
						t.Errorf("check --repair at %s: %+v; want the orphan removed", file, fd)
						continue
					}
					swept = append(swept, file)
				}
				if len(damage) != 1 || damage[0].Path != f.prefix+"/history/"+key+"/" || damage[0].Repaired || !damage[0].Remains ||
					!strings.HasPrefix(damage[0].Repair, "left as is: remove the entry with etcdctl del") {
					t.Errorf("check --repair's record-undecodable findings: %+v; want the history's, left to the operator", damage)
				}
			}
			if got := slices.Sorted(slices.Values(swept)); !slices.Equal(got, files) {
				t.Errorf("%s removed %q; want the key's files %q", by, got, files)
			}
			for _, file := range files {
				if _, err := os.Lstat(filepath.Join(f.dir, file)); !os.IsNotExist(err) {
					t.Errorf("%s left %s: %v", by, file, err)
				}
			}
		})
	}
}
