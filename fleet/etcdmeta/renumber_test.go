package etcdmeta

import (
	"errors"
	"math"
	"testing"

	"sessdb/internal/etcdtest"
)

// The largest history a key can need renumbering: a whole ring in the
// slots up to the last, and a hostile lot below it (more than etcd's
// default --max-txn-ops of 128, which the test cluster runs with). The
// renumber is one transaction within that limit: the ring at 1 to 64, each
// value as it was, everything below it removed, and the record's revision
// unchanged; the next write lands at 65.
func TestRenumberHistoryKeepsTheRingInOneTransaction(t *testing.T) {
	c := etcdtest.Start1(t)
	s := open(t, c)
	key := newKey()
	var ring []HistoryEntry
	for i := range HistoryLimit {
		e := entry(uint64(i+1), randHex(16))
		e.Seq = math.MaxUint64 - 1 - uint64(HistoryLimit-1-i)
		ring = append(ring, e)
	}
	rev, err := s.Create(ctx(t), key, record(key, HistoryLimit), ring)
	if err != nil {
		t.Fatal(err)
	}
	cli := c.Client(t)
	below := []uint64{0, 5, 64, 65}
	for i := range 300 {
		below = append(below, 1000+uint64(i))
	}
	for _, seq := range below {
		v, _ := encodeHistory(entry(1, randHex(16)))
		if _, err := cli.Put(ctx(t), s.historyKey(key, seq), string(v)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cli.Put(ctx(t), s.historyDir(key)+"!not-a-slot", "x"); err != nil {
		t.Fatal(err)
	}
	did, err := s.RenumberHistory(ctx(t), key, rev)
	if err != nil || did != (Renumbered{Kept: HistoryLimit, Dropped: int64(len(below)) + 1}) {
		t.Fatalf("RenumberHistory = %+v, %v; want %d kept, %d dropped", did, err, HistoryLimit, len(below)+1)
	}
	st, err := s.Get(ctx(t), key)
	if err != nil || st.Rev != rev || len(st.History) != HistoryLimit {
		t.Fatalf("after: rev %d (want %d), %d entries, %v", st.Rev, rev, len(st.History), err)
	}
	for i, e := range st.History {
		if e.Seq != uint64(i+1) || e.Ticket != ring[i].Ticket || e.At != ring[i].At {
			t.Fatalf("entry %d: seq %d ticket %s; want seq %d ticket %s", i, e.Seq, e.Ticket, i+1, ring[i].Ticket)
		}
	}
	if n, err := cli.Get(ctx(t), s.historyDir(key), clientPrefix()...); err != nil || n.Count != HistoryLimit {
		t.Fatalf("the key holds %v history keys (%v), want %d", n.Count, err, HistoryLimit)
	}
	if did, err := s.RenumberHistory(ctx(t), key, rev); err != nil || did != (Renumbered{}) {
		t.Fatalf("a second RenumberHistory = %+v, %v; want nothing done", did, err)
	}
	fresh := open(t, c) // the record's hint still names the last slot
	if _, err := fresh.Put(ctx(t), key, rev, record(key, HistoryLimit+1), entry(HistoryLimit+1, randHex(16))); err != nil {
		t.Fatal(err)
	}
	if st, err := s.Get(ctx(t), key); err != nil || st.History[HistoryLimit-1].Seq != HistoryLimit+1 {
		t.Fatalf("the write after: %+v, %v; want it at %d", st.History[HistoryLimit-1], err, HistoryLimit+1)
	}
}

// A renumber guarded by a base the key has moved from (or by none) writes
// nothing: a *ConflictError naming what the key holds.
func TestRenumberHistoryOnAMovedBaseWritesNothing(t *testing.T) {
	c := etcdtest.Start1(t)
	s := open(t, c)
	key := newKey()
	e := entry(1, randHex(16))
	e.Seq = math.MaxUint64 - 1
	rev, err := s.Create(ctx(t), key, record(key, 1), []HistoryEntry{e})
	if err != nil {
		t.Fatal(err)
	}
	var ce *ConflictError
	if _, err := s.RenumberHistory(ctx(t), key, rev-1); !errors.As(err, &ce) || ce.Current.Rev != rev {
		t.Fatalf("RenumberHistory on an old base = %v; want a conflict naming revision %d", err, rev)
	}
	if _, err := s.RenumberHistory(ctx(t), key, 0); !errors.As(err, &ce) {
		t.Fatalf("RenumberHistory on base 0 = %v; want a conflict", err)
	}
	st, err := s.Get(ctx(t), key)
	if err != nil || len(st.History) != 1 || st.History[0].Seq != math.MaxUint64-1 {
		t.Fatalf("after: %+v, %v; want the history as it was", st.History, err)
	}
}
