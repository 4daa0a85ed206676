package etcdmeta

import (
	"testing"

	"sessdb/internal/etcdtest"
)

// A List walk is one snapshot, its later pages read at its first page's
// revision: a record written during the walk, on a page not yet read, is
// not in it, and a record changed during it is seen as it was. A check
// or a reap that walks while promotions land judges one state of the
// fleet, not a mix of two.
func TestListIsOneSnapshotAcrossItsPages(t *testing.T) {
	s := open(t, etcdtest.Start1(t))
	keys := []string{"10000000000000000000000000000000", "20000000000000000000000000000000", "30000000000000000000000000000000"}
	revs := map[string]Rev{}
	for _, k := range keys {
		revs[k] = mustPut(t, s, k, 0, 1)
	}
	saved := listPageSize
	listPageSize = 1
	defer func() { listPageSize = saved }()
	seen := map[string]Rev{}
	err := s.List(ctx(t), func(it Item) error {
		seen[it.Key] = it.Rev
		if it.Key == keys[0] {
			mustPut(t, s, keys[2], revs[keys[2]], 2)
			mustPut(t, s, "40000000000000000000000000000000", 0, 1)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != len(keys) || seen[keys[2]] != revs[keys[2]] {
		t.Fatalf("List during writes saw %v; want the records as they were when it began, %v", seen, revs)
	}
}
