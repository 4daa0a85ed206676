package fleet

import (
	"slices"
	"testing"
	"time"

	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// A fleet's reap reports its progress as a sessions root's does (sessdb
// reap's line over a terminal): after each record judged, with the number
// listed, a name that is no key counted too. The files are swept after the
// keys, so the call that says every record is done comes only once the
// sweep is over: never while files are still being removed. A dry run
// reports the same. Before, fleet.ReapOptions had no Progress and a
// fleet's reap showed no line at all.
func TestReapReportsItsProgressRecordByRecord(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	old, kept := store.Key("github", "progress", "old"), store.Key("github", "progress", "kept")
	f.now = time.Now().Add(-20 * 24 * time.Hour)
	f.run(old, "a")
	f.now = time.Time{}
	f.run(kept, "a")
	f.run(kept, "b") // its first generation an orphan once the grace is past
	if _, err := c.Client(t).Put(t.Context(), f.prefix+"/record/not-a-key", "x"); err != nil {
		t.Fatal(err)
	}
	later := func() time.Time { return time.Now().Add(2 * time.Hour) }
	want := [][2]int{{1, 3}, {2, 3}, {3, 3}}
	for _, dry := range []bool{true, false} {
		// A real run sweeps the removed key's empty dir too.
		swept := map[bool]int{true: 1, false: 2}[dry]
		var calls [][2]int
		atSweep := -1 // the calls made when the first file was removed
		f.b.hook = func(p, k string) error {
			if p == hookSweep && atSweep < 0 {
				atSweep = len(calls)
			}
			return nil
		}
		r, err := f.b.Reap(t.Context(), ReapOptions{TTL: 14 * 24 * time.Hour, Now: later, DryRun: dry, Progress: func(done, total int) {
			calls = append(calls, [2]int{done, total})
		}})
		if err != nil || !slices.Equal(r.Removed, []string{old}) || len(r.Swept) != swept || r.Kept != 1 || len(r.NotKeys) != 1 {
			t.Fatalf("dry run %v: reap = %+v, %v; want %s removed, %d swept, one key kept, one name no key", dry, r, err, old, swept)
		}
		if !slices.Equal(calls, want) {
			t.Errorf("dry run %v: progress %v; want %v (one call per record of the 3 listed)", dry, calls, want)
		}
		if !dry && atSweep != 2 {
			t.Errorf("progress had said %v when the sweep removed its first file; want 2 of 3 records: done only once the sweep is", calls[:max(atSweep, 0)])
		}
	}
}
