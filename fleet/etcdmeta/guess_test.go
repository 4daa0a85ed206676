package etcdmeta

import (
	"testing"

	"sessdb/internal/etcdtest"
)

// A record read takes the record's hint of the newest history slot where
// it is above what the Store remembers (another Store wrote since), so
// that the write after it claims its slot without losing a compare; a
// hint below what it remembers is not taken.
func TestARecordsHintAboveTheRememberedSlotIsTaken(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	a, b := open(t, c), open(t, c)
	key := newKey()
	rev := mustPut(t, a, key, 0, 1) // a remembers slot 1
	rev = mustPut(t, b, key, rev, 2)
	mustPut(t, b, key, rev, 3)
	if _, err := a.PeekRecord(ctx(t), key); err != nil {
		t.Fatal(err)
	}
	if seq, ok := a.cachedSeq(key); !ok || seq != 3 {
		t.Fatalf("after reading the record a guesses slot %d (%v), want the record's hint 3", seq, ok)
	}
	a.rememberSeq(key, 5)
	if _, err := a.PeekRecord(ctx(t), key); err != nil {
		t.Fatal(err)
	}
	if seq, ok := a.cachedSeq(key); !ok || seq != 5 {
		t.Fatalf("after reading the record a guesses slot %d (%v), want the 5 it remembered", seq, ok)
	}
}
