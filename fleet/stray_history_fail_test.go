package fleet

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// A read of the histories' listing that fails after some of its names
// were merged (a page after the first: etcd gone, the request timed out)
// fails the dump: the keys with a history and no record that it would
// have listed are not dropped in silence (mutnew44's survivor: the merge
// took the listing's end for its error). The hook fails the listing at
// its k-th name, as a page's read fails it, after the names before it.
func TestDumpFailsWhenTheHistoriesListingFailsPartWay(t *testing.T) {
	etcdtest.Beside(t)
	f := newFixture(t, etcdtest.Start1(t))
	var keys []string
	for i := range 9 {
		key := store.Key("github", "stray-fail", fmt.Sprint(i))
		if i%3 == 1 {
			f.strayHistory(key)
		} else {
			f.run(key, "one")
		}
		keys = append(keys, key)
	}
	slices.Sort(keys)
	if got := names(f.dump(InspectOptions{Workers: 1})); !slices.Equal(got, keys) {
		t.Fatalf("dump = %q, want %q", got, keys)
	}
	failed := errors.New("the histories' listing failed")
	for _, k := range []int{1, 2, 5, 9} {
		t.Run(fmt.Sprint(k), func(t *testing.T) {
			seen := 0
			f.b.hook = func(p, _ string) error {
				if p != hookHistoryListed {
					return nil
				}
				if seen++; seen == k {
					return failed
				}
				return nil
			}
			defer func() { f.b.hook = nil }()
			var got []string
			err := f.b.Inspect(context.Background(), InspectOptions{Workers: 1}, func(r Report) error {
				got = append(got, r.Name)
				return nil
			})
			if !errors.Is(err, failed) {
				t.Fatalf("inspect = %v after %d of %d keys; want the listing's error", err, len(got), len(keys))
			}
			if !slices.Equal(got, keys[:len(got)]) || len(got) == len(keys) {
				t.Fatalf("reported %q; want a prefix of %q, not all of it", got, keys)
			}
		})
	}
}

// names is the name of each report, in order.
func names(reports []Report) []string {
	var out []string
	for _, r := range reports {
		out = append(out, r.Name)
	}
	return out
}
