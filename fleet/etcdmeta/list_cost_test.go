package etcdmeta

import (
	"fmt"
	"strings"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"sessdb/internal/etcdtest"
)

// HistoryKeys reads past the rest of a name's history once a page has
// named it: a page that ends inside a history is followed by one that
// begins at the next name, so that a walk of names with many entries
// each, in pages of fewer keys than a history holds, reads a page a name
// and one more that finds the range's end. Reading on through each
// history's other entries, only to skip them, names the same names and
// reads every key: here 64 entries a name in pages of 20 keys, 65 reads
// where the rule makes 21. The shards are not cut (cutPages raised), so
// that the count is the skip's alone.
func TestHistoryKeysReadsAPageANameNotItsWholeHistory(t *testing.T) {
	s := open(t, etcdtest.Start1(t), unhedged)
	savedSize, savedCut := listPageSize, cutPages
	listPageSize, cutPages = 2, 1<<40 // pages of 20 keys, no cut
	defer func() { listPageSize, cutPages = savedSize, savedCut }()
	const names, entries = 20, 64
	keys := spreadKeys(names)
	putKeys(t, s, historyOf(s, keys, entries, false), "x")
	c, sends := withSends(ctx(t))
	var got []string
	if err := s.HistoryKeys(c, func(name string) error { got = append(got, name); return nil }); err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, ",") != strings.Join(keys, ",") {
		t.Fatalf("HistoryKeys named %d names; want the %d keys in order", len(got), names)
	}
	// A page a name, and the read that finds the range's end.
	if got, want := sends.Load(), int32(names+1); got > want {
		t.Errorf("HistoryKeys over %d names of %d entries, pages of %d keys, made %d reads; want at most %d (a page a name, then the end)", names, entries, 10*listPageSize, got, want)
	}
}

// A page refused for its bytes where fewer records are left than it
// asked for is read again as a page of the records left, counted: not as
// a share of the count it asked for, which the few large records left
// overflow again. Here 30 small records read in doubling pages (2, 4, 8,
// 16) bring the page to 32 records; the 3 left are 40 KiB each (bound 64
// KiB): one refused page, the count, and a read a large record. A
// refused page taken to hold the 32 it asked for was read again as 8,
// then 2, each refused, with their counts: 13 reads, not 9.
func TestAPageRefusedPastTheLastRecordsIsReadAsThoseLeft(t *testing.T) {
	s := open(t, etcdtest.Start1(t), unhedged)
	saved := listPageBytes
	listPageBytes = 64 << 10
	defer func() { listPageBytes = saved }()
	const small, large = 30, 3
	for i := range small {
		mustPut(t, s, fmt.Sprintf("0%03d", i)+newKey()[4:], 0, 1) // first in key order
	}
	for range large {
		putLarge(t, s, "f"+newKey()[1:], 40<<10) // after them
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
	if seen != small+large {
		t.Fatalf("List passed on %d records; want %d", seen, small+large)
	}
	// The small records' pages, doubling from the first.
	var pages int32
	for limit, read := min(listPageSize, listFirstPage), int64(0); read < small; limit *= 2 {
		read += limit
		pages++
	}
	want := pages + 1 + 1 + large // the refused page, its count, a read a large record
	t.Logf("%d reads for %d small records and %d of 40 KiB (bound 64 KiB; at most %d)", sends.Load(), small, large, want)
	if got := sends.Load(); got > want {
		t.Errorf("List made %d reads for %d small records then %d of 40 KiB (bound 64 KiB); want at most %d: the small ones' pages, one refused page, its count and a read a large record", got, small, large, want)
	}
}

// After a page, the next holds as many records of the page's largest as
// fill half the byte bound (and no more than twice the page): records of
// about a sixth of the bound are read three a page, not one.
func TestListPagesHoldAsManyOfTheLargestAsFillHalfTheBound(t *testing.T) {
	s := open(t, etcdtest.Start1(t), unhedged)
	saved := listPageBytes
	listPageBytes = 64 << 10
	defer func() { listPageBytes = saved }()
	const n, size = 30, 10 << 10
	for range n {
		putLarge(t, s, newKey(), size)
	}
	resp, err := s.cli.Get(ctx(t), s.recordDir(), clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	var largest int64
	for _, kv := range resp.Kvs {
		largest = max(largest, int64(len(kv.Key)+len(kv.Value)))
	}
	per := int64(listPageBytes) / (2 * largest)
	if per < 2 {
		t.Fatalf("records of %d bytes fill half the bound %d alone: the test proves nothing", largest, listPageBytes)
	}
	c, sends := withSends(ctx(t))
	seen := 0
	if err := s.List(c, func(Item) error { seen++; return nil }); err != nil {
		t.Fatal(err)
	}
	if seen != n {
		t.Fatalf("List passed on %d records; want %d", seen, n)
	}
	first := min(listPageSize, listFirstPage)
	want := int32(1 + (n-first+per-1)/per) // the first page, then pages of per
	t.Logf("%d reads for %d records of %d bytes (bound %d: %d a page; at most %d)", sends.Load(), n, largest, listPageBytes, per, want)
	if got := sends.Load(); got > want {
		t.Errorf("List made %d reads for %d records of %d bytes (bound %d); want at most %d: pages of %d, the records that fill half the bound", got, n, largest, listPageBytes, want, per)
	}
}
