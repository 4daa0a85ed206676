package fleet

import (
	"slices"
	"testing"
	"time"

	"sessdb/fleet/etcdmeta"
	"sessdb/internal/etcdtest"
	"sessdb/internal/faults"
	"sessdb/store"
)

// Two repairs that both believe they hold a key's lock. The first's lease
// is revoked (an operator's etcdctl lease revoke, or its expiry while the
// holder was cut off) once its renumber has read the history it would
// number again, before its commit, and it goes on without knowing (its
// keep-alive is seconds away, and no step checks lost before the
// renumber). Meanwhile the second takes the lock and numbers the history
// again, and the key takes a refusal's entry above it, which moves no
// record revision, so the record's guard alone would not see it. The
// first's commit, built from its stale read, must not land: it would
// write the entries again where they are and remove every one above them,
// the refusal's among them. Its history guard (each entry as read, and
// nothing written under the history since) holds it.
func TestTwoRepairsHoldingOneLockLoseNoHistoryEntry(t *testing.T) {
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	key := store.Key("github", "two-holders", "renumber")
	f.run(key, "one")
	f.run(key, "two")
	f.toLastSlot(c, key)
	second := f.open()
	var secondFound []store.Finding
	var lost <-chan struct{}
	f.b.held = func(k string, l <-chan struct{}) {
		if k == key && lost == nil {
			lost = l
		}
	}
	reached := false
	t.Cleanup(func() { faults.Set(nil) })
	faults.Set(func(pt faults.Point) error {
		if pt != faults.EtcdRenumberBeforeCommit || reached {
			return nil
		}
		reached = true
		endLock(t, f, key)
		secondFound = f.repairAll(second)
		st, err := f.b.meta.GetRecord(t.Context(), key)
		if err != nil {
			t.Fatal(err)
		}
		refusal := etcdmeta.HistoryEntry{Gen: 2, At: time.Now().UnixNano(), Reason: "superseded", Outcome: "superseded", Job: "job-late", Ticket: "late-ticket"}
		if _, err := f.b.meta.AppendHistory(t.Context(), key, st.Rev, refusal); err != nil {
			t.Fatalf("the refusal's entry after the second repair: %v", err)
		}
		select {
		case <-lost:
			t.Fatal("the first repair learned its lease was revoked before it went on: the test would prove nothing")
		default:
		}
		return nil
	})
	found := f.repairAll(f.b)
	if !reached {
		t.Fatal("the first repair's renumber never reached its commit")
	}
	if len(secondFound) != 1 || !secondFound[0].Repaired {
		t.Fatalf("the second repair: %+v; want the history numbered again", secondFound)
	}
	seqs, _ := f.historyValues(c, key)
	if !slices.Equal(seqs, []string{"0000000000000001", "0000000000000002", "0000000000000003"}) {
		t.Errorf("history after both repairs: slots %v; want the two entries numbered again and the refusal's above them", seqs)
	}
	st, err := f.b.meta.Get(t.Context(), key)
	if err != nil || len(st.History) != 3 || st.History[2].Ticket != "late-ticket" {
		t.Fatalf("the key after both repairs: %+v, %v; want the refusal's entry kept, newest", st.History, err)
	}
	f.holds(key, "two", 2)
	if len(found) != 1 {
		t.Fatalf("the first repair: %+v; want its one finding", found)
	}
	t.Logf("the first repair, its lease revoked: %s", found[0].Repair)
}
