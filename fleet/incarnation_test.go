package fleet

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"sessdb/fleet/shared"
	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// A key whose record was removed alone (etcdctl del) and that was
// promoted anew keeps its earlier incarnation's files, of generations
// above the new record's, in its dir. No record of the new incarnation
// ever names them (a record's generation only grows), and every resolve
// that read the earlier record read it before the new incarnation's
// first promotion: reap removes them once that promotion is older than
// the grace period, where it kept them while the key was busy, until the
// key's generation passed them. check names them as what they are, an
// earlier incarnation's or a promotion that never committed, with the
// date the history gives; where no entry of the history dates a
// superseded generation, its line says the record's date judged it.
func TestCheckAndReapJudgeAnEarlierIncarnationsFilesByTheKeysNewStart(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	cli := c.Client(t)
	now := time.Now()
	stamp := func(file string, at time.Time) {
		t.Helper()
		if err := os.Chtimes(filepath.Join(f.dir, file), at, at); err != nil {
			t.Fatal(err)
		}
	}
	promote := func(key, marker string, ago time.Duration) string {
		t.Helper()
		f.now = now.Add(-ago)
		f.run(key, marker)
		file := f.recordFile(key)
		stamp(file, f.now)
		f.now = time.Time{}
		return file
	}
	// An earlier incarnation at gens 1 to 6, 8 to 3 hours ago; its record
	// removed alone; the key promoted anew 2 hours ago and 10 minutes ago:
	// a busy key at gen 2, whose record's date is within the grace period.
	key := store.Key("github", "incarnation", "again")
	var earlier []string
	for i := range 6 {
		earlier = append(earlier, promote(key, "old "+string(rune('1'+i)), time.Duration(8-i)*time.Hour))
	}
	if _, err := cli.Delete(t.Context(), f.prefix+"/record/"+key); err != nil {
		t.Fatal(err)
	}
	promote(key, "new 1", 2*time.Hour)
	own := promote(key, "new 2", 10*time.Minute)
	// A key of one incarnation whose promotion of gen 2 died before its
	// commit, 2 hours ago, under a record 3 hours old.
	dead := store.Key("github", "incarnation", "a promotion that died")
	promote(dead, "one", 3*time.Hour)
	deadFile, _, _, err := shared.Write(context.Background(), f.dir, dead, 2, strings.NewReader(testHeader))
	if err != nil {
		t.Fatal(err)
	}
	stamp(deadFile, now.Add(-2*time.Hour))
	// A key whose history was removed (its record kept): no entry dates
	// when its gen 1 was superseded.
	bare := store.Key("github", "incarnation", "no history")
	bareFirst := promote(bare, "one", 3*time.Hour)
	promote(bare, "two", 2*time.Hour)
	if _, err := cli.Delete(t.Context(), f.prefix+"/history/"+bare+"/", clientv3.WithPrefix()); err != nil {
		t.Fatal(err)
	}

	found, _ := checkFindings(t, f.b, CheckOptions{})
	for i, file := range earlier {
		fd, named := found[file]
		gen := i + 1
		switch {
		case gen <= 2 && named:
			// Gen 1 superseded 10 minutes ago by the new gen 2 (the
			// history's date), gen 2 the record's own generation,
			// judged by its date: both kept.
			t.Errorf("check named the earlier incarnation's gen %d, which the grace period keeps: %+v", gen, fd)
		case gen > 2 && (!named || fd.Kind != KindOrphan):
			t.Errorf("check found %+v at the earlier incarnation's gen %d; want an orphan", fd, gen)
		case gen > 2:
			for _, want := range []string{
				"gen " + string(rune('0'+gen)) + ", above the record's: an earlier incarnation's (the key's history reached gen 6 before the key began again from no record), or a promotion that lost its commit or died before it",
				"the key's history, back to 2h ago, names no generation above the record's; the record names gen 2, promoted 10m ago",
			} {
				if !strings.Contains(fd.Detail, want) {
					t.Errorf("the earlier incarnation's gen %d: %q; want it to say %q", gen, fd.Detail, want)
				}
			}
		}
	}
	if fd, ok := found[deadFile]; !ok || !strings.Contains(fd.Detail, "gen 2, above the record's: a promotion that lost its commit or died before it, or an earlier incarnation's whose history is gone; the key's history, back to 3h ago, names no generation above the record's; the record names gen 1, promoted 3h ago, 2h old") {
		t.Errorf("the dead promotion's file: %+v; want it named a promotion that never committed, by the history's date", fd)
	}
	if fd, ok := found[bareFirst]; !ok || !strings.Contains(fd.Detail, "gen 1, superseded (no entry of the key's history dates it: judged by the record's date); the record names gen 2, promoted 2h ago") {
		t.Errorf("gen 1 of the key with no history: %+v; want it to say no entry dates it", fd)
	}

	res, err := f.b.Reap(context.Background(), ReapOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := slices.Concat(earlier[2:], []string{deadFile, bareFirst})
	slices.Sort(want)
	got := slices.Sorted(slices.Values(res.Swept))
	if !slices.Equal(got, want) {
		t.Errorf("reap swept %q; want the earlier incarnation's gens 3 to 6, the dead promotion's and the unhistoried gen 1: %q", got, want)
	}
	if _, err := os.Stat(filepath.Join(f.dir, own)); err != nil {
		t.Errorf("the record's own file: %v", err)
	}
	f.holds(key, "new 2", 2)
}
