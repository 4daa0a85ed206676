package etcdmeta

import (
	"strings"
	"testing"

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
