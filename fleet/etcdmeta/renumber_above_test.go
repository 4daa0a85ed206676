package etcdmeta

import (
	"errors"
	"math"
	"testing"

	"sessdb/internal/etcdtest"
)

// A key whose newest history entry is at 2^64-1, the name above the last
// slot (an older sessdb's write or Create, another binary's), reads as
// damage, ErrAboveLastSlot, with the entry in its State at that seq; and
// RenumberHistory numbers it again with the others, each value as it
// was, as it does a history in the last slot. With any other damage
// besides (here a name that is no slot's, which would be put among the
// entries as one), it is ErrDamaged alone, and nothing is written.
// Before, the entry was left out of the State and RenumberHistory
// returned "damaged value: history entry name "ffffffffffffffff"", so
// only an etcdctl del of the key's newest entry settled it.
func TestRenumberHistoryTakesAnEntryAboveTheLastSlot(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	s := open(t, c)
	cli := c.Client(t)
	ring := []HistoryEntry{entry(1, randHex(16)), entry(2, randHex(16))}
	ring[0].Seq, ring[1].Seq = 1, 2
	place := func(extra string) (string, Rev) {
		key := newKey()
		rev, err := s.Create(ctx(t), key, record(key, 2), ring[:1])
		if err != nil {
			t.Fatal(err)
		}
		v, _ := encodeHistory(ring[1])
		if _, err := cli.Put(ctx(t), s.historyKey(key, math.MaxUint64), string(v)); err != nil {
			t.Fatal(err)
		}
		if extra != "" {
			if _, err := cli.Put(ctx(t), s.historyDir(key)+extra, string(v)); err != nil {
				t.Fatal(err)
			}
		}
		return key, rev
	}

	key, rev := place("")
	st, err := s.Get(ctx(t), key)
	if !errors.Is(err, ErrAboveLastSlot) || !errors.Is(err, ErrDamaged) || len(st.History) != 2 || st.History[1].Seq != math.MaxUint64 || st.History[1].Ticket != ring[1].Ticket {
		t.Fatalf("Get = %+v, %v; want both entries, the newest at 2^64-1, and ErrAboveLastSlot", st.History, err)
	}
	did, err := s.RenumberHistory(ctx(t), key, rev)
	if err != nil || did != (Renumbered{Kept: 2}) {
		t.Fatalf("RenumberHistory = %+v, %v; want 2 kept", did, err)
	}
	st, err = s.Get(ctx(t), key)
	if err != nil || len(st.History) != 2 || st.History[0].Seq != 1 || st.History[0].Ticket != ring[0].Ticket || st.History[1].Seq != 2 || st.History[1].Ticket != ring[1].Ticket {
		t.Fatalf("after: %+v, %v; want both entries at 1 and 2, in their order", st.History, err)
	}

	key, rev = place("~not-a-slot")
	if _, err := s.Get(ctx(t), key); err == nil || errors.Is(err, ErrAboveLastSlot) {
		t.Fatalf("Get with a name that is no slot's besides = %v; want ErrDamaged alone", err)
	}
	if did, err := s.RenumberHistory(ctx(t), key, rev); !errors.Is(err, ErrDamaged) || did != (Renumbered{}) {
		t.Fatalf("RenumberHistory with a name that is no slot's besides = %+v, %v; want ErrDamaged, nothing written", did, err)
	}
	if n, err := cli.Get(ctx(t), s.historyDir(key), clientPrefix()...); err != nil || n.Count != 3 {
		t.Fatalf("the key holds %v history keys (%v), want its 3 untouched", n.Count, err)
	}
}
