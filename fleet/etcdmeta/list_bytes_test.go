package etcdmeta

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"sessdb/internal/etcdtest"
)

// putLarge writes a record of about size bytes under key, as another
// binary or a hand could: a valid record with a field this binary does
// not know, which decoding skips.
func putLarge(t testing.TB, s *Store, key string, size int) {
	t.Helper()
	v, err := marshal(map[string]any{"v": SchemaVersion, "zz": strings.Repeat("x", size)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.cli.Put(ctx(t), s.recordKey(key), string(v)); err != nil {
		t.Fatal(err)
	}
}

// liveHeap is the heap still reachable, garbage collected first (twice:
// gRPC's pooled buffers outlive one collection).
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// A List over many large records holds a page of them at a time within
// listPageBytes, not a page of listPageSize records: etcd pages by count,
// and 100 records of 1.4 MB made a check take 566 MB (a page of 500 such,
// about 3 GB). The heap the walk keeps while it passes on a record is
// bounded by the page's bytes and a few records, whatever their number.
func TestListOfLargeRecordsHoldsABoundedPage(t *testing.T) {
	s := open(t, etcdtest.Start1(t))
	// 24 records: a List that paged by count after its first page held
	// 18 MiB halfway, over twice the bound, where one within it holds 1
	// MiB (48, the first figure, took 5 s idle and up to 50 s under load
	// of the package's tests run one at a time, for the same verdict).
	const n, size = 24, 1 << 20
	for range n {
		putLarge(t, s, newKey(), size)
	}
	base := liveHeap()
	var mid uint64
	seen := 0
	err := s.List(ctx(t), func(it Item) error {
		if it.Err != nil {
			t.Errorf("item %s: %v", it.Key, it.Err)
		}
		// Measured halfway: what the member, in the test's process,
		// built for the first page (refused at its header) is freed by
		// then.
		if seen++; seen == n/2 {
			mid = liveHeap()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if seen != n {
		t.Fatalf("List passed on %d records; want %d", seen, n)
	}
	held := int64(mid) - int64(base)
	bound := int64(4<<20) + 4*size // a page's bound, and a few records
	t.Logf("held %.1f MiB halfway over %d records of %d MiB (bound %.1f MiB)", float64(held)/(1<<20), n, size>>20, float64(bound)/(1<<20))
	if held > bound {
		t.Fatalf("List held %.1f MiB while passing on records of %d of 1 MiB; want at most a page's bound and a few records, %.1f MiB", float64(held)/(1<<20), n, float64(bound)/(1<<20))
	}
}

// Pages that large records make smaller, a record larger than a page's
// bound read alone, and small records after them in pages that grow
// back: every record once, in key order, the walk one snapshot (a
// record written during it is not in it).
func TestListOfMixedSizesPassesEveryRecordOnce(t *testing.T) {
	s := open(t, etcdtest.Start1(t))
	saved := listPageBytes
	listPageBytes = 256 << 10
	defer func() { listPageBytes = saved }()
	want := map[string]bool{}
	for i := range 60 {
		k := newKey()
		want[k] = true
		switch {
		case i == 7:
			putLarge(t, s, k, 600<<10) // over the bound alone
		case i%5 == 0:
			putLarge(t, s, k, 100<<10)
		default:
			mustPut(t, s, k, 0, 1)
		}
	}
	seen := map[string]int{}
	prev := ""
	late := ""
	err := s.List(ctx(t), func(it Item) error {
		if it.Key <= prev {
			t.Errorf("List out of order: %q after %q", it.Key, prev)
		}
		prev = it.Key
		if it.Err != nil {
			t.Errorf("item %s: %v", it.Key, it.Err)
		}
		seen[it.Key]++
		if late == "" {
			late = "ffffffff" + newKey()[8:]
			putLarge(t, s, late, 100<<10)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for k := range want {
		if seen[k] != 1 {
			t.Errorf("record %s passed on %d times; want once", k, seen[k])
		}
	}
	if len(seen) != len(want) {
		t.Errorf("List passed on %d records; want the %d there when it began (%s written during it is not)", len(seen), len(want), late)
	}
}

// After a record larger than a page's bound, read alone, the pages of
// the small records that follow grow back (twice over a page, up to the
// bound and listPageSize): the walk reads them in a few pages, not one
// read each. The reads are counted at the client (every send of the
// walk's requests, refused ones and counts included).
func TestListPagesGrowBackAfterARecordOverTheBound(t *testing.T) {
	s := open(t, etcdtest.Start1(t), unhedged)
	saved := listPageBytes
	listPageBytes = 64 << 10
	defer func() { listPageBytes = saved }()
	big := "0" + newKey()[1:] // first in key order
	putLarge(t, s, big, 100<<10)
	const small = 300
	for range small {
		mustPut(t, s, "f"+newKey()[1:], 0, 1) // after it
	}
	c, sends := withSends(ctx(t))
	seen := 0
	if err := s.List(c, func(it Item) error {
		if it.Err != nil {
			t.Errorf("item %s: %v", it.Key, it.Err)
		}
		seen++
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if seen != small+1 {
		t.Fatalf("List passed on %d records; want %d", seen, small+1)
	}
	t.Logf("%d reads for one record of 100 KiB and %d of about 300 bytes (bound 64 KiB)", sends.Load(), small)
	if n := sends.Load(); n > small/4 {
		t.Errorf("List took %d reads for one record over the bound and %d small ones after it; want pages that grow back, far fewer than a read per record", n, small)
	}
}

// A page holds at most listPageSize records, however small they are and
// however far the byte bound would let it grow: a walk of n small
// records takes at least n/listPageSize reads.
func TestListPagesHoldAtMostListPageSizeRecords(t *testing.T) {
	s := open(t, etcdtest.Start1(t), unhedged)
	saved := listPageSize
	listPageSize = 10
	defer func() { listPageSize = saved }()
	const n = 100
	for range n {
		mustPut(t, s, newKey(), 0, 1)
	}
	c, sends := withSends(ctx(t))
	seen := 0
	if err := s.List(c, func(Item) error { seen++; return nil }); err != nil {
		t.Fatal(err)
	}
	if seen != n {
		t.Fatalf("List passed on %d records; want %d", seen, n)
	}
	if got := sends.Load(); got < n/int32(listPageSize) {
		t.Errorf("List read %d records in %d reads; want pages of at most %d records, at least %d reads", n, got, listPageSize, n/int32(listPageSize))
	}
}

// HistoryKeys reads keys only, no entry's value, in pages of ten times
// List's count: entries whose values are each over the byte bound are
// named in pages of many keys, not one read (and a refused one) per
// entry, nor in pages of List's count.
func TestHistoryKeysReadsNoValue(t *testing.T) {
	s := open(t, etcdtest.Start1(t), unhedged)
	saved, savedSize := listPageBytes, listPageSize
	listPageBytes, listPageSize = 4<<10, 4
	defer func() { listPageBytes, listPageSize = saved, savedSize }()
	dir := s.cfg.Prefix + "/history/"
	const keys, entries = 40, 2
	value := strings.Repeat("x", 8<<10)
	for range keys {
		k := newKey()
		for e := range entries {
			if _, err := s.cli.Put(ctx(t), fmt.Sprintf("%s%s/%016x", dir, k, e+1), value); err != nil {
				t.Fatal(err)
			}
		}
	}
	c, sends := withSends(ctx(t))
	named := 0
	if err := s.HistoryKeys(c, func(string) error { named++; return nil }); err != nil {
		t.Fatal(err)
	}
	if named != keys {
		t.Fatalf("HistoryKeys named %d keys; want %d", named, keys)
	}
	if got := sends.Load(); got >= keys/2 {
		t.Errorf("HistoryKeys took %d reads over %d entries of 8 KiB (bound 4 KiB, List's pages of %d); want keys read without their values, in pages of ten times List's count", got, keys*entries, listPageSize)
	}
}

// A page refused for its bytes is read again as a page the records left
// fit: they are counted, so that the last few large records are not
// taken for a page of many smaller ones and refused again. A walk of
// three records, two of which overflow the bound together, takes one
// refused read, the count, and a read a record at most.
func TestAPageRefusedForItsBytesIsRefusedOnce(t *testing.T) {
	s := open(t, etcdtest.Start1(t), unhedged)
	saved := listPageBytes
	listPageBytes = 64 << 10
	defer func() { listPageBytes = saved }()
	const n = 3
	for range n {
		putLarge(t, s, newKey(), 40<<10)
	}
	c, sends := withSends(ctx(t))
	seen := 0
	if err := s.List(c, func(Item) error { seen++; return nil }); err != nil {
		t.Fatal(err)
	}
	if seen != n {
		t.Fatalf("List passed on %d records; want %d", seen, n)
	}
	if got := sends.Load(); got > n+2 {
		t.Errorf("List took %d reads for %d records of 40 KiB (bound 64 KiB); want at most one refused, the count and one a record (%d)", got, n, n+2)
	}
}

// unhedged gives a Store the longest request timeout, so that no read is
// sent again (a hedged try goes out at a third of the timeout) and a
// test counts each read once, however slow the machine.
func unhedged(cfg *Config) { cfg.RequestTimeout = MaxRequestTimeout }

// List's first read asks for a few records (listFirstPage), not a page of
// listPageSize: etcd builds a read's whole answer before the client can
// refuse it, and 100 records of 1.4 MB raised the member's peak RSS by
// 200-430 MB for each walk, only for the page to be refused. Records of
// up to half the byte bound (as etcd's default request limit, 1.5 MiB,
// is of listPageBytes, 4 MiB) are then read with no page refused and no
// count: no more reads than records.
func TestListsFirstPageIsNoPageOfManyLargeRecords(t *testing.T) {
	s := open(t, etcdtest.Start1(t), unhedged)
	saved := listPageBytes
	listPageBytes = 64 << 10
	defer func() { listPageBytes = saved }()
	const n = 6
	for range n {
		putLarge(t, s, newKey(), 30<<10)
	}
	c, sends := withSends(ctx(t))
	seen := 0
	if err := s.List(c, func(Item) error { seen++; return nil }); err != nil {
		t.Fatal(err)
	}
	if seen != n {
		t.Fatalf("List passed on %d records; want %d", seen, n)
	}
	if got := sends.Load(); got > n {
		t.Errorf("List took %d reads for %d records of 30 KiB (bound 64 KiB); want no page refused for its bytes, at most one read a record", got, n)
	}
}
