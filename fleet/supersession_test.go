package fleet

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sessdb/fleet/etcdmeta"
	"sessdb/fleet/shared"
	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// A key moved in with a history naming generations above its record's
// (Record.HistoryGen, as migrate --to etcd carries a single host's): its
// next promotion is numbered above them, and the record's file it
// supersedes is kept a grace period after that promotion. It was judged
// by the moved-in entries' dates (generations its record never held, 2 h
// old): reap swept it, and check named it, the moment it was superseded,
// under any resolve still copying it.
func TestAMovedInHistoryAboveTheRecordDoesNotDateItsSupersession(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	key := store.Key("github", "moved-in", "history above")
	now := time.Now()
	name, size, crc, err := shared.Write(context.Background(), f.dir, key, 5, strings.NewReader(testHeader))
	if err != nil {
		t.Fatal(err)
	}
	old := now.Add(-3 * time.Hour)
	if err := os.Chtimes(filepath.Join(f.dir, name), old, old); err != nil {
		t.Fatal(err)
	}
	rec := etcdmeta.Record{Transcript: &etcdmeta.Transcript{Gen: 5, Size: size, CRC32C: uint64(crc), PromotedAt: old.UnixNano(), File: name}}
	hist := []etcdmeta.HistoryEntry{{Seq: 1, Gen: 5, At: old.UnixNano()}, {Seq: 2, Gen: 7, At: now.Add(-2 * time.Hour).UnixNano()}}
	if _, err := f.b.meta.Create(context.Background(), key, rec, hist); err != nil {
		t.Fatal(err)
	}
	f.run(key, "one")
	if got := f.recordFile(key); !strings.Contains(got, "/0000000000000008-") {
		t.Fatalf("the promotion made %s; this test wants gen 8", got)
	}
	res, err := f.b.Reap(context.Background(), ReapOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Swept) != 0 {
		t.Errorf("reap swept %q; want gen 5's file %s kept (superseded just now)", res.Swept, name)
	}
	found, _ := checkFindings(t, f.b, CheckOptions{})
	if fd, ok := found[name]; ok {
		t.Errorf("check reported %s: %+v; want it kept", name, fd)
	}
}

// A key whose record an operator deleted (etcdctl del), its history
// left, starts again from generation 1: the old incarnation's entries of
// the same generations are not the new one's. Its gen 1, superseded just
// now, was judged by the old gen 2's date (4 h ago): reap swept it at
// once, under any resolve still copying it.
func TestAnEarlierIncarnationsHistoryDoesNotDateASupersession(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	key := store.Key("github", "reborn", "history left")
	now := time.Now()
	for i, ago := range []time.Duration{5 * time.Hour, 4 * time.Hour, 3 * time.Hour} {
		f.now = now.Add(-ago)
		f.run(key, []string{"a", "b", "c"}[i])
	}
	f.now = time.Time{}
	if _, err := c.Client(t).Delete(t.Context(), f.b.meta.RecordKey(key)); err != nil {
		t.Fatal(err)
	}
	// The old incarnation's files go, so that only the new one's are left.
	ents, err := os.ReadDir(filepath.Join(f.dir, key))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if err := os.Remove(filepath.Join(f.dir, key, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	f.run(key, "x")
	first := f.recordFile(key)
	old := now.Add(-3 * time.Hour)
	if err := os.Chtimes(filepath.Join(f.dir, first), old, old); err != nil {
		t.Fatal(err)
	}
	f.run(key, "y")
	if !strings.Contains(first, "/0000000000000001-") {
		t.Fatalf("the new incarnation's first file is %s; this test wants gen 1", first)
	}
	res, err := f.b.Reap(context.Background(), ReapOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Swept) != 0 {
		t.Errorf("reap swept %q; want %s kept (superseded just now)", res.Swept, first)
	}
	found, _ := checkFindings(t, f.b, CheckOptions{})
	if fd, ok := found[first]; ok {
		t.Errorf("check reported %s: %+v; want it kept", first, fd)
	}
}

// A key whose newest history entry is above the last slot (an older
// sessdb's, or another binary's) is read whole by reap, and its
// superseded generation judged by that history, as check judges it: not
// by the record's date alone, which a busy key keeps recent.
func TestAReapJudgesASupersededGenerationByAHistoryAboveTheLastSlot(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	key := store.Key("github", "busy-key", "above the last slot")
	now := time.Now()
	var first string
	for i, ago := range []time.Duration{3 * time.Hour, 2 * time.Hour, 10 * time.Minute} {
		f.now = now.Add(-ago)
		f.run(key, []string{"one", "two", "three"}[i])
		if i == 0 {
			first = f.recordFile(key)
			if err := os.Chtimes(filepath.Join(f.dir, first), f.now, f.now); err != nil {
				t.Fatal(err)
			}
		}
	}
	f.now = time.Time{}
	cli := c.Client(t)
	hist := f.prefix + "/history/" + key + "/"
	got, err := cli.Get(t.Context(), hist+"0000000000000003")
	if err != nil || len(got.Kvs) != 1 {
		t.Fatalf("the key's third entry: %v, %v", got, err)
	}
	if _, err := cli.Put(t.Context(), hist+"ffffffffffffffff", string(got.Kvs[0].Value)); err != nil {
		t.Fatal(err)
	}
	res, err := f.b.Reap(context.Background(), ReapOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Swept) != 1 || res.Swept[0] != first || len(res.Skipped) != 0 {
		t.Errorf("reap swept %q (skipped %v); want gen 1's file %s (superseded 2 h ago)", res.Swept, res.Skipped, first)
	}
}

// A key whose history does not decode has its superseded generations
// judged by its record's date alone, as before the history was read: the
// entries that do decode are not taken, since the one that does not may
// be the one that tells the key's incarnations apart. A busy key's
// generation is then kept, not swept by a partial history.
func TestAReapDoesNotJudgeByTheEntriesOfAHistoryThatDoesNotDecode(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	key := store.Key("github", "busy-key", "partial history")
	now := time.Now()
	for i, ago := range []time.Duration{3 * time.Hour, 2 * time.Hour, 10 * time.Minute} {
		f.now = now.Add(-ago)
		f.run(key, []string{"one", "two", "three"}[i])
		if i == 0 {
			first := f.recordFile(key)
			if err := os.Chtimes(filepath.Join(f.dir, first), f.now, f.now); err != nil {
				t.Fatal(err)
			}
		}
	}
	f.now = time.Time{}
	if _, err := c.Client(t).Put(t.Context(), f.prefix+"/history/"+key+"/x/0000000000000009", "x"); err != nil {
		t.Fatal(err)
	}
	res, err := f.b.Reap(context.Background(), ReapOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Swept) != 0 {
		t.Errorf("reap swept %q; want nothing (the record, promoted 10 min ago, alone dates the key's files)", res.Swept)
	}
}

// superseded walks the history newest first and stops at what dates a
// generation's successor: an entry at or below the generation (without a
// ticket's base to stop at, an earlier incarnation's entries lie past
// it), or the promotion committed over it; a refusal's base (the ticket
// the refused job held) stops nothing; and the oldest entry the ring
// still holds counts.
func TestSupersededStopsAtTheSuccessor(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) int64 { return now.Add(-d).UnixNano() }
	rec := &etcdmeta.Transcript{Gen: 3, PromotedAt: at(10 * time.Minute)}
	for _, c := range []struct {
		name string
		hist []etcdmeta.HistoryEntry
		want int64
	}{
		{"an earlier incarnation's gen 2 past a promotion with no base", []etcdmeta.HistoryEntry{
			{Gen: 2, At: at(5 * time.Hour), BaseGen: 1}, {Gen: 1, At: at(time.Hour)}, {Gen: 2, At: at(20 * time.Minute)}, {Gen: 3, At: at(10 * time.Minute), BaseGen: 2},
		}, at(20 * time.Minute)},
		{"a refusal's base is no successor", []etcdmeta.HistoryEntry{
			{Gen: 1, At: at(3 * time.Hour)}, {Gen: 2, At: at(2 * time.Hour), BaseGen: 1}, {Gen: 2, At: at(30 * time.Minute), BaseGen: 1, Outcome: "superseded"}, {Gen: 3, At: at(10 * time.Minute), BaseGen: 2},
		}, at(2 * time.Hour)},
		{"the oldest entry held is the successor", []etcdmeta.HistoryEntry{
			{Gen: 2, At: at(2 * time.Hour)}, {Gen: 3, At: at(10 * time.Minute), BaseGen: 2},
		}, at(2 * time.Hour)},
	} {
		if got, _ := superseded(c.hist, 1, rec); got.UnixNano() != c.want {
			t.Errorf("%s: superseded = %v, want %v", c.name, got.UTC(), time.Unix(0, c.want).UTC())
		}
	}
}
