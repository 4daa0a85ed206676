package fleet

import (
	"slices"
	"testing"

	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// check --repair whose renumber lands and loses its answer (etcd's
// "leader changed" once the commit was applied) says the history was
// numbered again, and walks on: the renumber's commit is sent again on
// its base and finds its entries in place (etcdmeta's RenumberHistory).
// Before, the walk stopped on etcd unavailable and the finding said "left
// as is" of a history numbered again, which the next check found nothing
// to do about.
func TestARepairWhoseRenumberLostItsAnswerSaysItRenumbered(t *testing.T) {
	c := etcdtest.Start(t, etcdtest.Options{Members: 1, InProcess: true})
	f := newFixture(t, c)
	key := store.Key("github", "renumber", "lost-answer")
	f.run(key, "one")
	f.run(key, "two")
	vals := f.toLastSlot(c, key)
	f.b.hook = func(p, k string) error {
		if p == hookRepairLocked && k == key {
			// The renumber's read is the next Txn, its commit the one after.
			c.LoseNext("/etcdserverpb.KV/Txn", 1, 1)
		}
		return nil
	}
	found := f.repairAll(f.b)
	f.b.hook = nil
	want := "numbered again in place: the newest 2 entries at slots 1 to 2, each as it was; the record is not rewritten (its revision, a job's base, stays) and the key takes promotions again"
	if len(found) != 1 || !found[0].Repaired || found[0].Remains || found[0].Repair != want {
		t.Fatalf("check --repair whose renumber lost its answer: %+v; want Repair %q", found, want)
	}
	seqs, got := f.historyValues(c, key)
	if !slices.Equal(seqs, []string{"0000000000000001", "0000000000000002"}) || !slices.Equal(got, vals) {
		t.Fatalf("history after the repair: %v; want the two entries at 1 and 2, each as it was", seqs)
	}
}
