package fleet

import (
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"sessdb/fleet/etcdmeta"
	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// liveHeap is the heap still reachable, garbage collected first (twice:
// gRPC's pooled buffers outlive one collection).
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// Check and reap keep each listed record for their whole walk, to judge
// its files by, and migrate --from etcd each listed key, read again at its
// turn: only what does that, not a record's other fields, which another
// binary or a hand may have made as large as etcd takes. 100 records with
// a pi version of 1.4 MB made a check take 332 MB once List was bounded
// (its callers held every one), and a migrate --from etcd --dry-run 419
// MB. What the walk holds of the records' large fields is a few at a
// time, however many there are.
//
// Not beside other tests (no etcdtest.Beside): the heap is the process's,
// and tests running beside moved it by ±16 MiB between two readings
// (dump's page test, beside it, made reap's figure 33 MiB), failing the
// 5 MiB bound in a run of the package where the walk held 0.3 MiB. Go
// runs a package's parallel tests after its others end.
func TestWalksHoldNoListedRecordsLargeFields(t *testing.T) {
	f := newFixture(t, etcdtest.Start1(t))
	f.run(store.Key("github", "walk-heap", "one"), "one") // marks the dir
	// Records a page of 500 of which stays within a List page's bound
	// (4 MiB): no page is refused, and so no answer the member (which
	// runs in the test's process) built for one is held meanwhile. 600
	// of them, two pages: a walk that kept each listed record whole held
	// 4 MiB halfway, twice the bound, where one that keeps what it needs
	// held 0.3 MiB (1,500 of them, the first figure, took 13 s of the
	// package's sequential run to put and walk, for the same verdict).
	const n, size = 600, 7000
	big := strings.Repeat("x", size)
	for i := range n {
		key := store.Key("github", "walk-heap", strconv.Itoa(i))
		if _, err := f.b.meta.Put(t.Context(), key, 0, etcdmeta.Record{PiVersion: &big}, etcdmeta.HistoryEntry{Gen: 0, At: 1}); err != nil {
			t.Fatal(err)
		}
	}
	bound := int64(n * size / 2) // half the records' size

	for _, walk := range []struct {
		name string
		run  func(progress func(int, int)) error
	}{
		{"check", func(p func(int, int)) error {
			_, err := f.b.Check(t.Context(), CheckOptions{Workers: 1, Progress: p}, nil)
			return err
		}},
		{"reap --dry-run", func(p func(int, int)) error {
			_, err := f.b.Reap(t.Context(), ReapOptions{DryRun: true, Progress: p})
			return err
		}},
		{"migrate --from etcd --dry-run", func(p func(int, int)) error {
			_, err := FromEtcd(t.Context(), f.b, filepath.Join(t.TempDir(), "root"), MigrateOptions{DryRun: true, Progress: p}, nil)
			return err
		}},
	} {
		base := liveHeap()
		var mid uint64
		calls := 0
		err := walk.run(func(int, int) {
			if calls++; calls == n/2 {
				mid = liveHeap()
			}
		})
		if err != nil {
			t.Fatalf("%s: %v", walk.name, err)
		}
		if calls < n {
			t.Fatalf("%s: progress called %d times; want one a key", walk.name, calls)
		}
		// Measured halfway: the listed records are all kept (the keys
		// still to walk need theirs).
		held := int64(mid) - int64(base)
		t.Logf("%s held %.1f MiB halfway, over %d records of %d bytes", walk.name, float64(held)/(1<<20), n, size)
		if held > bound {
			t.Errorf("%s held %.1f MiB halfway, over %d records of %d bytes; want at most %.1f MiB, half of them", walk.name, float64(held)/(1<<20), n, size, float64(bound)/(1<<20))
		}
	}
}
