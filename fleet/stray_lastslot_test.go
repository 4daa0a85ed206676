package fleet

import (
	"errors"
	"strings"
	"testing"

	"sessdb/fleet/etcdmeta"
	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// A history with no record whose newest entry is in the last slot (the
// record removed alone, with etcdctl, from a key whose history was full)
// makes the key's next promotion promote-failed, and the renumber refuses
// a key with no record. check --repair leaves it, remaining, and names
// what removes it; the finding does not promise the renumber. Before, the
// repair said "nothing to do: the key, read again under its lock, no
// longer holds an entry in the last slot", the problem not remaining
// (summary Remaining 0: check --repair's exit 0), while the entry stayed
// and the finding said check --repair numbers the history again.
func TestARepairLeavesAHistoryWithNoRecordInItsLastSlot(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	key := store.Key("github", "stray-history", "last-slot")
	f.run(key, "one")
	f.run(key, "two")
	f.toLastSlot(c, key)
	if _, err := c.Client(t).Delete(t.Context(), f.prefix+"/record/"+key); err != nil {
		t.Fatal(err)
	}
	for range 2 { // the second check finds it as the first left it
		found, sum := checkFindings(t, f.b, CheckOptions{Repair: true})
		slot, ok := found[f.slotPath(key)]
		if !ok || slot.Severity != store.SeverityProblem {
			t.Fatalf("check --repair found %+v; want a problem at %s", found, f.slotPath(key))
		}
		if !slot.Remains || slot.Repaired || sum.Remaining != 1 {
			t.Errorf("the entry in the last slot of a history with no record: %+v, summary %+v; want it remaining, not repaired, Remaining 1", slot, sum)
		}
		dir := f.prefix + "/history/" + key + "/"
		if !strings.Contains(slot.Repair, "etcdctl del --prefix "+dir) {
			t.Errorf("the repair says %q; want it to name etcdctl del --prefix %s", slot.Repair, dir)
		}
		if strings.Contains(slot.Detail, "numbers the history again") {
			t.Errorf("the finding says %q; a history with no record is never numbered again", slot.Detail)
		}
	}
	st, err := f.b.meta.Get(t.Context(), key)
	if n := len(st.History); err != nil || n == 0 || st.History[n-1].Seq != ^uint64(0)-1 {
		t.Fatalf("the history after check --repair: %+v, %v; want it as it was, its newest entry in the last slot", st.History, err)
	}
}

func (f *fixture) slotPath(key string) string {
	return f.prefix + "/history/" + key + "/fffffffffffffffe"
}

// The promotion a history with no record in its last slot refuses says
// what settles it: check --repair numbers no history without a record, so
// its error sends the operator to remove the history with etcdctl, never
// to the repair that leaves it (TestARepairLeavesAHistoryWithNoRecordInItsLastSlot).
func TestAPromotionOntoAHistoryWithNoRecordInItsLastSlotNamesWhatRemovesIt(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	key := store.Key("github", "stray-history", "last-slot-promote")
	f.run(key, "one")
	f.toLastSlot(c, key)
	if _, err := c.Client(t).Delete(t.Context(), f.prefix+"/record/"+key); err != nil {
		t.Fatal(err)
	}
	sess, _ := f.job(key, "two")
	res, err := f.promote(sess)
	if res.Promoted || !errors.Is(err, etcdmeta.ErrDamaged) {
		t.Fatalf("promote = %+v, %v; want refused for the history in its last slot", res, err)
	}
	if msg := err.Error(); strings.Contains(msg, "numbers the key's history again") || !strings.Contains(msg, "etcdctl del --prefix") {
		t.Errorf("promote's error %q; want it to name etcdctl del --prefix, not a repair that leaves a history with no record", msg)
	}
}
