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

// Two check --repair runs at once (an operator's and a timer's), or a
// repair and a reap: both listed the same orphan, and the other removed it
// between this run's listing and its own removal under the key's lock.
// This run removed nothing: its line must not say "removed", nor count it
// repaired, as a sessions root's repair says of a meta.db or a reaped dir
// another run settled first ("gone since it was found"), and as reap's
// sweep leaves a file another swept out of its own. Found reading the
// fleet's repair for two runs at once: it said "removed", repaired.
func TestARepairSaysAnOrphanAnotherRemovedFirstIsGoneSince(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	for _, other := range []string{"repair", "reap"} {
		t.Run(other, func(t *testing.T) {
			f := newFixture(t, c)
			key := store.Key("github", "two-repairs", other)
			f.now = time.Now().Add(-10 * time.Second)
			f.run(key, "a")
			orphan := f.recordFile(key)
			f.run(key, "b")
			f.now = time.Time{}
			old := time.Now().Add(-10 * time.Second)
			if err := os.Chtimes(filepath.Join(f.dir, orphan), old, old); err != nil {
				t.Fatal(err)
			}

			second, first := f.open(), f.open()
			first.hook = func(p, k string) error {
				if p != hookRepair || k != key {
					return nil
				}
				// The other run comes to the key first, and removes the
				// orphan this run has listed.
				var err error
				var removed bool
				switch other {
				case "repair":
					_, err = second.Check(context.Background(), CheckOptions{Repair: true, Grace: time.Second}, func(fd store.Finding) error {
						removed = removed || fd.Path == orphan && fd.Repaired
						return nil
					})
				case "reap":
					var res ReapResult
					res, err = second.Reap(context.Background(), ReapOptions{Grace: time.Second})
					removed = slices.Contains(res.Swept, orphan)
				}
				if err != nil || !removed {
					t.Errorf("the other %s: removed %s %v, %v", other, orphan, removed, err)
				}
				return nil
			}
			var line *store.Finding
			sum, err := first.Check(t.Context(), CheckOptions{Repair: true, Grace: time.Second}, func(fd store.Finding) error {
				if fd.Path == orphan {
					line = &fd
				}
				return nil
			})
			if err != nil || line == nil {
				t.Fatalf("check --repair = %+v, %v; the orphan's line %v", sum, err, line)
			}
			if line.Repaired || sum.Repaired != 0 || !strings.Contains(line.Repair, "gone since it was found") {
				t.Errorf("this run's line: repair %q, repaired %v (summary: repaired %d); want it gone since it was found, not this run's repair", line.Repair, line.Repaired, sum.Repaired)
			}
			f.holds(key, "b", 2)
		})
	}
}
