package etcdmeta

import (
	"math"
	"testing"

	"sessdb/internal/etcdtest"
)

// The slot below the last is the last an entry takes, and it does take
// one: a key whose newest entry is two below the last slot promotes once
// more, into the last but one.
func TestTheLastButOneSlotTakesAnEntry(t *testing.T) {
	etcdtest.Beside(t)
	s := open(t, etcdtest.Start1(t))
	key := newKey()
	e := entry(1, randHex(16))
	e.Seq = math.MaxUint64 - 2
	rev, err := s.Create(ctx(t), key, record(key, 1), []HistoryEntry{e})
	if err != nil {
		t.Fatal(err)
	}
	ticket := randHex(16)
	if _, err := s.Put(ctx(t), key, rev, record(key, 2), entry(2, ticket)); err != nil {
		t.Fatalf("Put into the last but one slot = %v, want it written", err)
	}
	st, err := s.Get(ctx(t), key)
	if err != nil {
		t.Fatal(err)
	}
	if newest := st.History[len(st.History)-1]; newest.Ticket != ticket || newest.Seq != math.MaxUint64-1 {
		t.Fatalf("newest entry = seq %d ticket %q, want the promotion's at the last but one slot", newest.Seq, newest.Ticket)
	}
}
