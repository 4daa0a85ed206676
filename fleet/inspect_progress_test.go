package fleet

import (
	"fmt"
	"slices"
	"testing"

	"sessdb/fleet/etcdmeta"
	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// dump's progress counts, at every report, the records etcd held at the
// listing's first page and every key with a history and no record met by
// then: a key reported is counted in the total shown with it, and the
// total never falls back. A total that kept only the last count it was
// given, or left the histories with no record out of it, showed a walk
// with such a key first as a total of 1, or of the records alone, while
// that key was already reported.
func TestDumpsProgressCountsTheRecordsAndTheHistoriesMet(t *testing.T) {
	etcdtest.Beside(t)
	f := newFixture(t, etcdtest.Start1(t))
	var keys []string
	for i := range 6 {
		keys = append(keys, store.Key("github", "dump-progress", fmt.Sprint("k", i)))
	}
	slices.Sort(keys)
	// A history with no record before every record, and one among them.
	strays := map[string]bool{keys[0]: true, keys[3]: true}
	records := 0
	for _, k := range keys {
		if strays[k] {
			f.strayHistory(k)
		} else {
			f.run(k, "one")
			records++
		}
	}
	straysSeen, last := 0, 0
	var names []string
	err := f.b.Inspect(t.Context(), InspectOptions{Workers: 1, Progress: func(done, total int) {
		// Progress is called after the visit of the key it counts.
		if want := records + straysSeen; total < want || total > len(keys) || total < last {
			t.Errorf("progress after %d reports (%d of them histories with no record): total %d; want %d..%d, never below the last total %d", done, straysSeen, total, want, len(keys), last)
		}
		last = total
	}}, func(r Report) error {
		names = append(names, r.Name)
		if strays[r.Name] {
			straysSeen++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(names, keys) || last != len(keys) {
		t.Fatalf("dump reported %q, progress ended at %d; want %q, %d", names, last, keys, len(keys))
	}
}

// A dump whose listing's snapshot is compacted under it goes on at the
// newest revision (etcdmeta.List), and may then report more records than
// the count etcd sent with its first page: its progress never shows a
// total below the reports made.
func TestDumpsProgressIsNeverBelowWhatIsDoneAcrossACompaction(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	var keys []string
	for i := range 4 {
		key := store.Key("github", "dump-compacted", fmt.Sprint("a", i))
		keys = append(keys, key)
		f.run(key, "one")
	}
	compacted := false
	f.b.hook = func(p, k string) error {
		if p != hookListed || compacted {
			return nil
		}
		// After the listing's first page (2 records): 3 records more,
		// then a compaction past the snapshot. One before the listing's
		// place is met as a history with no record, and read again.
		compacted = true
		for i := range 3 {
			key := store.Key("github", "dump-compacted", fmt.Sprint("b", i))
			keys = append(keys, key)
			if _, err := f.b.meta.Put(t.Context(), key, 0, etcdmeta.Record{}, etcdmeta.HistoryEntry{Gen: 0, At: 1}); err != nil {
				t.Error(err)
			}
		}
		resp, err := c.Client(t).Get(t.Context(), f.prefix+"/none")
		if err != nil {
			t.Error(err)
			return nil
		}
		if _, err := c.Client(t).Compact(t.Context(), resp.Header.Revision); err != nil {
			t.Error(err)
		}
		return nil
	}
	defer func() { f.b.hook = nil }()
	var names []string
	last := 0
	err := f.b.Inspect(t.Context(), InspectOptions{Workers: 1, Progress: func(done, total int) {
		if total < done {
			t.Errorf("progress: %d done of a total of %d", done, total)
		}
		last = total
	}}, func(r Report) error {
		names = append(names, r.Name)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(keys)
	if !compacted || !slices.Equal(names, keys) || last != len(keys) {
		t.Fatalf("dump across a compaction reported %q, progress ended at %d; want %q, %d", names, last, keys, len(keys))
	}
}
