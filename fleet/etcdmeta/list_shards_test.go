package etcdmeta

import (
	"context"
	"fmt"
	"math/big"
	"slices"
	"strings"
	"sync"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"sessdb/internal/etcdtest"
)

// countedKV is the Store's KV, keeping the count of keys etcd answered
// each range read with: the keys the member visited to count them
// (etcd counts every key from a read's start to its end, whatever its
// limit), the walk's cost that grows with what each read runs over.
type countedKV struct {
	clientv3.KV
	mu      sync.Mutex
	counted int64 // the counts summed
	reads   int
}

func (k *countedKV) Get(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	resp, err := k.KV.Get(ctx, key, opts...)
	if err == nil {
		k.mu.Lock()
		k.counted += resp.Count
		k.reads++
		k.mu.Unlock()
	}
	return resp, err
}

// counting makes s's reads counted, before s is used by the test.
func counting(s *Store) *countedKV {
	k := &countedKV{KV: s.cli.KV}
	s.cli.KV = k
	return k
}

func (k *countedKV) take() (counted int64, reads int) {
	k.mu.Lock()
	defer k.mu.Unlock()
	counted, reads = k.counted, k.reads
	k.counted, k.reads = 0, 0
	return counted, reads
}

// putKeys writes each key with value v, many to a transaction.
func putKeys(t testing.TB, s *Store, keys []string, v string) {
	t.Helper()
	for chunk := range slices.Chunk(keys, 100) {
		ops := make([]clientv3.Op, len(chunk))
		for i, k := range chunk {
			ops[i] = clientv3.OpPut(k, v)
		}
		if _, err := s.cli.Txn(ctx(t)).Then(ops...).Commit(); err != nil {
			t.Fatal(err)
		}
	}
}

// spreadKeys is n keys spread evenly over the keys' space.
func spreadKeys(n int) []string {
	out := make([]string, n)
	space := new(big.Int).Lsh(big.NewInt(1), 128)
	for i := range n {
		k := new(big.Int).Div(new(big.Int).Mul(space, big.NewInt(int64(i))), big.NewInt(int64(n)))
		out[i] = fmt.Sprintf("%032x", k)
	}
	return out
}

// historyOf is the history keys of names, each with entries entries
// (and its bare key where bare).
func historyOf(s *Store, names []string, entries int, bare bool) []string {
	var out []string
	for _, name := range names {
		if bare {
			out = append(out, s.cfg.Prefix+"/history/"+name)
		}
		for i := range entries {
			out = append(out, fmt.Sprintf("%s%016x", s.historyDir(name), i+1))
		}
	}
	return out
}

// A walk of the fleet (List, HistoryKeys) has etcd count each key a few
// times, not once for each page read before it: etcd counts every key
// from a read's start to the read's end whatever its limit, and each
// page read to the end of the prefix, so that the walk's count grew with
// the square of the keys (10,000 keys of 64 entries: 128 pages of the
// histories' names counted 41 M keys, 7 s of the member's CPU of a 12 s
// stats walk). Here 1,024 keys of 3 entries in pages of 10 keys (a
// record a page for List): about 130 pages, each key counted 130 times
// before, the reads of List 1,024.
func TestAWalkCountsEachKeyAFewTimesNotOnceAPage(t *testing.T) {
	s := open(t, etcdtest.Start1(t))
	kv := counting(s)
	saved := listPageSize
	listPageSize = 1 // pages of 10 keys; List's of one record
	defer func() { listPageSize = saved }()
	keys := spreadKeys(1024)
	const entries = 3
	putKeys(t, s, historyOf(s, keys, entries, false), "x")
	records := make([]string, len(keys))
	for i, k := range keys {
		records[i] = s.recordKey(k)
	}
	putKeys(t, s, records, "x")
	kv.take()

	var got []string
	if err := s.HistoryKeys(ctx(t), func(name string) error {
		got = append(got, name)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, keys) {
		t.Fatalf("HistoryKeys named %d names; want the %d keys in order", len(got), len(keys))
	}
	// Each key counted by the first read, by each of two cuts' first
	// reads, and by the pages of its shard (at most cutPages+1 of them
	// once no cut is made): at most 8 times its entries.
	total := int64(len(keys) * entries)
	if counted, reads := kv.take(); counted > 8*total {
		t.Errorf("HistoryKeys of %d entries had etcd count %d keys in %d reads (%.1f a key); want at most 8 a key", total, counted, reads, float64(counted)/float64(total))
	} else {
		t.Logf("HistoryKeys of %d entries: %d keys counted in %d reads", total, counted, reads)
	}

	got = got[:0]
	if err := s.List(ctx(t), func(it Item) error {
		got = append(got, it.Key)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, keys) {
		t.Fatalf("List listed %d keys; want the %d in order", len(got), len(keys))
	}
	if counted, reads := kv.take(); counted > 8*int64(len(keys)) {
		t.Errorf("List of %d records had etcd count %d keys in %d reads (%.1f a record); want at most 8 a record", len(keys), counted, reads, float64(counted)/float64(len(keys)))
	} else {
		t.Logf("List of %d records: %d keys counted in %d reads", len(keys), counted, reads)
	}
}

// boundaryNames are names at and beside every boundary a walk's cut can
// make (hex strings of one to three digits and a key's 32), names that
// are no key sorting before, between and after the hex digits, the
// empty name, and a run of keys under one prefix that makes the walk cut
// deeper there.
func boundaryNames() []string {
	names := []string{"", "!", "0!", "9z", ":", "@", "A", "`", "a!", "g", "z", "~", "\x7f", "é", "\xff", "\xff\xff",
		"0", "1", "7", "8", "9", "a", "f", "00", "0f", "10", "7f", "7g", "80", "9f", "a0", "ef", "f0", "ff", "fg",
		"000", "00f", "7f0", "7ff", "800", "fff", "ffff", "7f7", "7f8",
		strings.Repeat("0", 32), strings.Repeat("f", 32), "0" + strings.Repeat("f", 31), "1" + strings.Repeat("0", 31),
		"7" + strings.Repeat("f", 31), "8" + strings.Repeat("0", 31), "7f" + strings.Repeat("0", 30), "7f" + strings.Repeat("f", 30),
		strings.Repeat("0", 40), strings.Repeat("f", 33)}
	for i, k := range spreadKeys(96) {
		names = append(names, k, "7f"+k[2:], "7f8"+k[3:], fmt.Sprintf("%x", i))
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// wantNames is what HistoryNames is to give for the history keys under
// dir of resp (one read of them all, in key order): each key's name, but
// where it repeats the name before it, and whether the first of the run
// is the bare name.
func wantNames(dir string, resp *clientv3.GetResponse) (names []string, bare []bool) {
	for i, kv := range resp.Kvs {
		name, _, entry := strings.Cut(string(kv.Key[len(dir):]), "/")
		if i > 0 && names[len(names)-1] == name {
			continue
		}
		names = append(names, name)
		bare = append(bare, !entry)
	}
	return names, bare
}

// Cut in shards, a walk gives the same names, in the same order, each as
// often as one read of all the keys does: names at every boundary of a
// cut, bare or with entries, shards left empty, pages that end inside a
// shard and at its end, whatever the page and how soon the walk cuts.
func TestAWalkInShardsGivesEveryNameInOrder(t *testing.T) {
	s := open(t, etcdtest.Start1(t))
	names := boundaryNames()
	dir := s.cfg.Prefix + "/history/"
	var keys []string
	for i, name := range names {
		// Bare keys on some names, between zero and 12 entries each
		// (the same name's entries over more than one page).
		keys = append(keys, historyOf(s, []string{name}, i%13, i%3 == 0)...)
		if i%13 == 0 && i%3 != 0 {
			keys = append(keys, dir+name)
		}
	}
	// One name's entries past a 40-hex-digit name's: a cut as deep as a
	// key's hex digits, and no deeper.
	keys = append(keys, historyOf(s, []string{strings.Repeat("0", 40)}, 60, true)...)
	slices.Sort(keys)
	putKeys(t, s, slices.Compact(keys), "x")
	records := make([]string, len(names))
	for i, name := range names {
		records[i] = s.recordKey(name)
	}
	putKeys(t, s, records, "x") // the empty name's is the records' dir

	all, err := s.cli.Get(ctx(t), dir, clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		t.Fatal(err)
	}
	wantName, wantBare := wantNames(dir, all)
	recs, err := s.cli.Get(ctx(t), s.recordDir(), clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		t.Fatal(err)
	}
	var wantRecs []string
	for _, kv := range recs.Kvs {
		wantRecs = append(wantRecs, string(kv.Key[len(s.recordDir()):]))
	}

	savedSize, savedCut := listPageSize, cutPages
	defer func() { listPageSize, cutPages = savedSize, savedCut }()
	for _, c := range []struct{ size, cut int64 }{{1, 4}, {1, 1}, {1, 0}, {3, 2}, {500, 4}} {
		listPageSize, cutPages = c.size, c.cut
		var got []string
		var bare []bool
		if err := s.HistoryNames(ctx(t), func(name string, isBare bool) error {
			got = append(got, name)
			bare = append(bare, isBare)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, wantName) || !slices.Equal(bare, wantBare) {
			t.Errorf("pages of %d keys, cut past %d pages: HistoryNames gave %d names, %q; want %d, %q", 10*c.size, c.cut, len(got), diffNames(got, wantName), len(wantName), diffNames(wantName, got))
		}
		got = got[:0]
		if err := s.List(ctx(t), func(it Item) error {
			got = append(got, it.Key)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, wantRecs) {
			t.Errorf("pages of %d records, cut past %d pages: List listed %d, %q; want %d, %q", c.size, c.cut, len(got), diffNames(got, wantRecs), len(wantRecs), diffNames(wantRecs, got))
		}
	}
}

// diffNames is a's names not in b, or not where b has them.
func diffNames(a, b []string) []string {
	var out []string
	for i, n := range a {
		if i >= len(b) || b[i] != n {
			out = append(out, fmt.Sprintf("%d:%q", i, n))
			if len(out) == 5 {
				break
			}
		}
	}
	return out
}

// A walk cut in shards is one snapshot as it was in one range: keys
// written and removed while it walks, in shards it has not read yet (at
// their boundaries too), are as they were when it began.
func TestAWalkInShardsIsOneSnapshot(t *testing.T) {
	s := open(t, etcdtest.Start1(t))
	saved := listPageSize
	listPageSize = 1
	defer func() { listPageSize = saved }()
	dir := s.cfg.Prefix + "/history/"
	names := spreadKeys(300)
	putKeys(t, s, historyOf(s, names, 2, false), "x")
	records := make([]string, len(names))
	for i, name := range names {
		records[i] = s.recordKey(name)
	}
	putKeys(t, s, records, "x")
	before, err := s.cli.Get(ctx(t), s.cfg.Prefix+"/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		t.Fatal(err)
	}
	at := before.Header.Revision
	snapshot := func(prefix string) *clientv3.GetResponse {
		resp, err := s.cli.Get(ctx(t), prefix, clientv3.WithPrefix(), clientv3.WithKeysOnly(), clientv3.WithRev(at))
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	// change adds names at boundaries and among the keys, and removes
	// every fifth key's history and record (a reap), all past the first
	// shard the walk reads.
	changed := false
	change := func() {
		if changed {
			return
		}
		changed = true
		var added []string
		for _, name := range []string{"1", "8", "80", "f", "ff", "g", "8" + strings.Repeat("0", 30) + "1", names[151][:31] + "g", names[299] + "0"} {
			added = append(added, dir+name, s.historyDir(name)+"0000000000000001", s.recordKey(name))
		}
		putKeys(t, s, added, "y")
		for i := 20; i < len(names); i += 5 {
			if _, err := s.cli.Txn(ctx(t)).Then(clientv3.OpDelete(s.historyDir(names[i]), clientv3.WithPrefix()),
				clientv3.OpDelete(s.recordKey(names[i]))).Commit(); err != nil {
				t.Fatal(err)
			}
		}
	}
	wantName, _ := wantNames(dir, snapshot(dir))
	var got []string
	if err := s.HistoryKeys(ctx(t), func(name string) error {
		got = append(got, name)
		change()
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, wantName) {
		t.Errorf("HistoryKeys while keys were added and removed gave %d names, %q; want the %d as they were, %q", len(got), diffNames(got, wantName), len(wantName), diffNames(wantName, got))
	}

	changed = false
	for i := 20; i < len(names); i += 5 {
		// Put back what the first walk removed, so that the second
		// finds them to remove.
		putKeys(t, s, append(historyOf(s, names[i:i+1], 2, false), s.recordKey(names[i])), "x")
	}
	before, err = s.cli.Get(ctx(t), s.cfg.Prefix+"/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		t.Fatal(err)
	}
	at = before.Header.Revision
	var wantRecs []string
	for _, kv := range snapshot(s.recordDir()).Kvs {
		wantRecs = append(wantRecs, string(kv.Key[len(s.recordDir()):]))
	}
	got = got[:0]
	if err := s.List(ctx(t), func(it Item) error {
		got = append(got, it.Key)
		change()
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, wantRecs) {
		t.Errorf("List while records were added and removed listed %d, %q; want the %d as they were, %q", len(got), diffNames(got, wantRecs), len(wantRecs), diffNames(wantRecs, got))
	}
}
