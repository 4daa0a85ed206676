package fleet

import (
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"sessdb/fleet/etcdmeta"
	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// dump walks the records as they are listed, a page at a time: when a key
// is reported, the walk has listed no more than a window of keys past it
// and a page. Before, every record was listed, whole, before the first
// was reported: 100 records with a pi version of 1.4 MB made a dump take
// 339 MB. A key with a history and no record is still reported in its
// place in key order, and the progress counts every key.
func TestDumpHoldsAPageOfRecordsNotEveryOne(t *testing.T) {
	etcdtest.Beside(t)
	f := newFixture(t, etcdtest.Start1(t))
	// Records of 200 KB: a List page (4 MiB) holds about 20 of them.
	const n, size, workers = 120, 200 << 10, 1
	big := strings.Repeat("x", size)
	var keys []string
	for i := range n {
		key := store.Key("github", "dump-page", strconv.Itoa(i))
		keys = append(keys, key)
		if _, err := f.b.meta.Put(t.Context(), key, 0, etcdmeta.Record{PiVersion: &big}, etcdmeta.HistoryEntry{Gen: 0, At: 1}); err != nil {
			t.Fatal(err)
		}
	}
	stray := store.Key("github", "dump-page", "stray")
	f.strayHistory(stray)
	keys = append(keys, stray)
	slices.Sort(keys)

	var listed atomic.Int64 // records listed so far (the hook runs on the walk's producer)
	var listedAt []int
	f.b.hook = func(p, k string) error {
		if p == hookListed {
			listed.Add(1)
		}
		return nil
	}
	defer func() { f.b.hook = nil }()
	var names []string
	records, lastTotal := 0, 0
	err := f.b.Inspect(t.Context(), InspectOptions{Workers: workers, Progress: func(done, total int) { lastTotal = total }}, func(r Report) error {
		names = append(names, r.Name)
		if r.Name != stray {
			records++
		}
		listedAt = append(listedAt, int(listed.Load()))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(names, keys) {
		t.Fatalf("dump reported %d keys %q...; want the %d keys in key order, the history with no record among them", len(names), names[:min(3, len(names))], len(keys))
	}
	if lastTotal != n+1 {
		t.Errorf("progress ended at a total of %d; want %d, every key", lastTotal, n+1)
	}
	// At most the walk's window (8 a worker) and a page of 4 MiB past
	// the key reported (that key's page included).
	most := 8*workers + (4<<20)/size + 1
	records = 0
	for i, name := range names {
		if name != stray {
			records++
		}
		// listedAt was read after the visit: records is the count of
		// records visited by then.
		if ahead := listedAt[i] - records; ahead > most {
			t.Fatalf("when key %d was reported, %d records were listed past it; want at most %d (a window and a page)", i, ahead, most)
		}
	}
}
