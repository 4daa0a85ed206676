package etcdmeta

import (
	"fmt"
	"slices"
	"testing"

	"sessdb/internal/etcdtest"
)

// walkReadsBound is the most range reads walkRange makes over n keys
// spread evenly over the keys' space, by its rule: pages whose limit
// starts at first and doubles after every page that leaves keys in its
// shard, up to most; a shard cut only where a read finds more than
// cutPages pages of most keys left in it. Every read either returns a
// full page, of the schedule's next limit, or reads its shard to the end:
//
//   - full pages read distinct keys, so there are no more of them than
//     the schedule's first pages that fit in n keys;
//   - a shard is read to its end once at most: the whole range, plus the
//     sixteen a cut adds (it takes the cut shard's place with seventeen,
//     the one below the digit "0" holding none of these keys);
//   - evenly spread, the shards of d hex digits hold at most ceil(n/16^d)
//     keys each, and are cut only if more than cutPages*most of them are
//     left past a read's page, of first keys at least.
//
// It is the rule's count, not one seen: a walk that reads a page more
// than its keys need, grows its pages slower, cuts sooner or into more
// shards reads more than this.
func walkReadsBound(n, first, most, cutPages int64) int64 {
	var full, read int64
	for limit := first; read+limit <= n; limit = min(most, 2*limit) {
		read += limit
		full++
	}
	var cuts int64
	for shards := int64(1); (n+shards-1)/shards-first > cutPages*most; shards *= 16 {
		cuts += shards
	}
	return full + 1 + 16*cuts
}

// A listing's range reads are its pages and one a shard, no more: the
// records' List and the histories' names, at no key, one, a page, the
// most keys a walk reads without a cut (cutPages pages left after the
// first) and past them (one cut), at the package's own page sizes. Counting each read kills the walk's mutants that only
// raise its cost (TestAWalkCountsEachKeyAFewTimesNotOnceAPage counts the
// keys etcd visits, not the reads).
func TestAWalksRangeReadsAreItsPagesAndOneAShard(t *testing.T) {
	const entries = 3 // each name's history entries
	c := etcdtest.Start1(t)
	noCut := int(cutPages*listPageSize + min(listPageSize, listFirstPage))
	for _, n := range []int{0, 1, int(listPageSize), noCut, 5000} {
		t.Run(fmt.Sprintf("keys=%d", n), func(t *testing.T) {
			s := open(t, c, func(cfg *Config) { cfg.Prefix = fmt.Sprintf("/reads%d", n) })
			kv := counting(s)
			keys := spreadKeys(n)
			records := make([]string, n)
			for i, k := range keys {
				records[i] = s.recordKey(k)
			}
			putKeys(t, s, records, "x")
			putKeys(t, s, historyOf(s, keys, entries, false), "x")
			kv.take()

			var got []string
			if err := s.List(ctx(t), func(it Item) error {
				got = append(got, it.Key)
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, keys) && (n > 0 || len(got) > 0) {
				t.Fatalf("List listed %d keys; want the %d in order", len(got), n)
			}
			want := walkReadsBound(int64(n), min(listPageSize, listFirstPage), listPageSize, cutPages)
			if _, reads := kv.take(); int64(reads) > want {
				t.Errorf("List of %d records made %d range reads; want at most %d (its pages and one a shard)", n, reads, want)
			} else {
				t.Logf("List of %d records: %d range reads (at most %d)", n, reads, want)
			}

			got = got[:0]
			if err := s.HistoryKeys(ctx(t), func(name string) error {
				got = append(got, name)
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, keys) && (n > 0 || len(got) > 0) {
				t.Fatalf("HistoryKeys named %d names; want the %d keys in order", len(got), n)
			}
			want = walkReadsBound(int64(n*entries), 10*listPageSize, 10*listPageSize, cutPages)
			if _, reads := kv.take(); int64(reads) > want {
				t.Errorf("HistoryKeys over %d entries made %d range reads; want at most %d (its pages and one a shard)", n*entries, reads, want)
			} else {
				t.Logf("HistoryKeys over %d entries: %d range reads (at most %d)", n*entries, reads, want)
			}
		})
	}
}
