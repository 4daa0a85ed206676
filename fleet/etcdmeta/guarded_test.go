package etcdmeta

import (
	"testing"

	"sessdb/internal/etcdtest"
)

// A writer whose guess is that the key has no history yet (it read the
// key before any entry was appended) still claims the slot above the
// newest entry, though the ring's appends since have trimmed slot 1 free
// again: Put's entry is the newest, inside the ring Get reads.
func TestAGuessOfNoHistoryAppendsAboveTheNewest(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	a, b := open(t, c), open(t, c)
	key := newKey()
	rev, err := a.Create(ctx(t), key, record(key, 1), nil)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := b.Get(ctx(t), key); err != nil || st.Rev != rev || len(st.History) != 0 {
		t.Fatalf("Get = rev %d, %d entries, %v; want rev %d and no history", st.Rev, len(st.History), err, rev)
	}
	promoteAfterARingOfRefusals(t, a, b, key, rev, HistoryLimit+2)
}

// A writer that remembers slot 1 from the key's earlier life (since
// deleted by another host and created anew without history) claims the
// slot right above the newest entry the key now holds, which is none: its
// entry is the first, at slot 1, not above a gap.
func TestAGuessOfSlotOneFromADeletedKeyLeavesNoGap(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	a, b := open(t, c), open(t, c)
	key := newKey()
	rev := mustPut(t, a, key, 0, 1) // a now guesses slot 1 is the newest
	if _, err := b.Delete(ctx(t), key, rev); err != nil {
		t.Fatal(err)
	}
	rev, err := b.Create(ctx(t), key, record(key, 1), nil)
	if err != nil {
		t.Fatal(err)
	}
	ticket := randHex(16)
	if _, err := a.Put(ctx(t), key, rev, record(key, 2), entry(2, ticket)); err != nil {
		t.Fatal(err)
	}
	st, err := b.Get(ctx(t), key)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.History) != 1 || st.History[0].Ticket != ticket || st.History[0].Seq != 1 {
		t.Fatalf("history = %+v, want the promotion's entry alone at seq 1", st.History)
	}
}
