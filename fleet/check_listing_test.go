package fleet

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// A check lists the transcripts dir once: the entries that are no key's
// with a record (a name that is no key, the mark's temps) come from the
// listing that finds the orphans, as a reap's mark temps do (on NFS with
// many files, a second full listing per check). With and without Repair
// it lists the dir once and finds what it found: the key's orphan, the
// old mark temp, the name that is no key; the repair removes the first
// two. Before, each check listed the dir twice (ListOrphans, then the
// entries).
func TestCheckListsTheTranscriptsDirOnce(t *testing.T) {
	f := newFixture(t, etcdtest.Start1(t))
	key := store.Key("github", "check-lists", "once")
	f.runExpired(key, "old") // promoted 30 days ago: its old files are past the grace period
	orphan := f.oldOrphan(key)
	temp := f.oldMarkTemp()
	if err := os.Mkdir(filepath.Join(f.dir, "not-a-key"), 0o700); err != nil {
		t.Fatal(err)
	}
	lists := f.countListings()
	want := []string{key + "/" + filepath.Base(orphan) + " " + string(KindOrphan), temp + " " + string(KindOrphan), "not-a-key " + string(store.KindNotAKey)}
	slices.Sort(want)
	for _, repair := range []bool{false, true} {
		lists.n.Store(0)
		var got []string
		sum, err := f.b.Check(t.Context(), CheckOptions{Repair: repair}, func(fd store.Finding) error {
			got = append(got, fd.Path+" "+string(fd.Kind))
			return nil
		})
		slices.Sort(got)
		if err != nil || !slices.Equal(got, want) || sum.Entries != 3 || sum.Keys != 1 {
			t.Fatalf("check (repair %v) = %+v, %v, found %q; want %q, 3 entries, 1 key", repair, sum, err, got, want)
		}
		if n := lists.n.Load(); n != 1 {
			t.Errorf("check (repair %v) listed the transcripts dir %d times; want 1", repair, n)
		}
	}
	for _, p := range []string{orphan, filepath.Join(f.dir, temp)} {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Errorf("%s after check --repair: %v; want it removed", p, err)
		}
	}
}
