package fleet

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"sessdb/fleet/etcdmeta"
	"sessdb/internal/etcdtest"
	"sessdb/internal/faults"
	"sessdb/store"
)

// toLastSlot moves key's history, entry by entry and in its order, to the
// slots that end at the last one an entry takes (2^64-2), by hand, as a
// history brought in from a key dir begun that high leaves it; the record
// is not touched. It returns the entries' values, oldest first.
func (f *fixture) toLastSlot(c *etcdtest.Cluster, key string) []string {
	f.t.Helper()
	return f.toSlotsEndingAt(c, key, math.MaxUint64-1)
}

// toSlotsEndingAt is toLastSlot, the newest entry moved to top.
func (f *fixture) toSlotsEndingAt(c *etcdtest.Cluster, key string, top uint64) []string {
	f.t.Helper()
	cli := c.Client(f.t)
	dir := f.prefix + "/history/" + key + "/"
	got, err := cli.Get(f.t.Context(), dir, clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByKey, clientv3.SortAscend))
	if err != nil || len(got.Kvs) == 0 {
		f.t.Fatalf("the key's history: %v, %v", got, err)
	}
	var vals []string
	if _, err := cli.Delete(f.t.Context(), dir, clientv3.WithPrefix()); err != nil {
		f.t.Fatal(err)
	}
	var ops []clientv3.Op
	for i, kv := range got.Kvs {
		vals = append(vals, string(kv.Value))
		seq := top - uint64(len(got.Kvs)-1-i)
		ops = append(ops, clientv3.OpPut(fmt.Sprintf("%s%016x", dir, seq), string(kv.Value)))
	}
	if _, err := cli.Txn(f.t.Context()).Then(ops...).Commit(); err != nil {
		f.t.Fatal(err)
	}
	return vals
}

// historyValues is key's history as etcd holds it: each entry's slot
// and value, oldest first.
func (f *fixture) historyValues(c *etcdtest.Cluster, key string) (seqs []string, vals []string) {
	f.t.Helper()
	dir := f.prefix + "/history/" + key + "/"
	got, err := c.Client(f.t).Get(f.t.Context(), dir, clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByKey, clientv3.SortAscend))
	if err != nil {
		f.t.Fatal(err)
	}
	for _, kv := range got.Kvs {
		seqs = append(seqs, strings.TrimPrefix(string(kv.Key), dir))
		vals = append(vals, string(kv.Value))
	}
	return seqs, vals
}

func (f *fixture) repairAll(b *Backend) []store.Finding {
	f.t.Helper()
	var found []store.Finding
	if _, err := b.Check(f.t.Context(), CheckOptions{Repair: true}, func(fd store.Finding) error {
		found = append(found, fd)
		return nil
	}); err != nil {
		f.t.Fatal(err)
	}
	return found
}

// A fleet key whose history's newest entry sits in the last slot takes no
// promotion, refusal or reap's entry. check --repair numbers its history
// again from 1 in place, as a key dir's: the record is not rewritten (its
// revision, a job's base, stays), the entries keep their values and order,
// and the key takes its next promotion, recorded above them. Before, the
// repair left it ("remove the entry with etcdctl del"), and the promotion
// after it was promote-failed.
func TestARepairRenumbersAFleetHistoryInItsLastSlot(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	key := store.Key("github", "renumber", "fleet")
	f.run(key, "one")
	f.run(key, "two")
	vals := f.toLastSlot(c, key)
	before, err := f.b.meta.GetRecord(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	found := f.repairAll(f.b)
	// Both entries kept, none below the ring dropped: the note says so,
	// and names no "0 older ones removed" (as mutant r19 of the fleet
	// sweep's list did).
	want := "numbered again in place: the newest 2 entries at slots 1 to 2, each as it was; the record is not rewritten (its revision, a job's base, stays) and the key takes promotions again"
	if len(found) != 1 || !found[0].Repaired || found[0].Remains || found[0].Repair != want {
		t.Fatalf("check --repair: %+v; want the history numbered again, Repair %q", found, want)
	}
	seqs, got := f.historyValues(c, key)
	if !slices.Equal(seqs, []string{"0000000000000001", "0000000000000002"}) || !slices.Equal(got, vals) {
		t.Fatalf("history after the repair: %v; want the two entries at 1 and 2, each as it was", seqs)
	}
	after, err := f.b.meta.GetRecord(t.Context(), key)
	if err != nil || after.Rev != before.Rev {
		t.Fatalf("record at revision %d after the repair (%v), want %d: unchanged", after.Rev, err, before.Rev)
	}
	if found := f.repairAll(f.b); len(found) != 0 {
		t.Fatalf("check after the repair: %+v; want nothing", found)
	}
	f.holds(key, "two", 2)
	if res := f.run(key, "three"); res.Gen != 3 {
		t.Fatalf("the promotion after the repair: %+v, want gen 3", res)
	}
	f.holds(key, "three", 3)
	st, err := f.b.meta.Get(t.Context(), key)
	if err != nil || len(st.History) != 3 || st.History[2].Seq != 3 || st.History[2].Gen != 3 {
		t.Fatalf("history after the next promotion: %+v, %v; want it recorded at 3", st.History, err)
	}
}

// A promotion racing the repair is not lost. One that came before it was
// promote-failed (the history full); its job's retry, whose guess of the
// newest slot is still the last one when the repair on another host
// commits, is promoted at the generation it was resolved for, its entry
// recorded: the repair changed no record revision, so no ticket is
// superseded, and the stale guess costs the write a retry, never an entry.
func TestAPromotionRacingTheRenumberIsNotLost(t *testing.T) {
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	key := store.Key("github", "renumber", "race")
	f.run(key, "one")
	f.toLastSlot(c, key)
	sess, _ := f.job(key, "two")
	if res, err := f.promote(sess); res.Promoted || !errors.Is(err, etcdmeta.ErrDamaged) {
		t.Fatalf("promote before the repair = %+v, %v; want promote-failed for the full history", res, err)
	}
	other := f.open()
	var once sync.Once
	var found []store.Finding
	defer faults.Set(nil)
	faults.Set(func(p faults.Point) error {
		if p == faults.EtcdWriteBeforeGuess {
			once.Do(func() { found = f.repairAll(other) })
		}
		return nil
	})
	res, err := f.promote(sess)
	faults.Set(nil)
	if len(found) != 1 || !found[0].Repaired {
		t.Fatalf("the repair in the promotion's window: %+v; want the history numbered again", found)
	}
	if err != nil || !res.Promoted || res.Repeat || res.Gen != 2 {
		t.Fatalf("the job's retry beside the repair = %+v, %v; want promoted at gen 2", res, err)
	}
	f.holds(key, "two", 2)
	st, err := f.b.meta.Get(t.Context(), key)
	if err != nil || len(st.History) != 2 || st.History[0].Seq != 1 || st.History[1].Seq != 2 || st.History[1].Gen != 2 {
		t.Fatalf("history: %+v, %v; want gen 1 at 1 and the retry's gen 2 at 2", st.History, err)
	}
}

// A key whose record changes between the repair's read under the lock
// and its renumber (an operator's etcdctl, a binary that takes no lock)
// is left as it is, saying so: the renumber is guarded by the record's
// revision, and writes nothing when it lost.
func TestARenumberOfAKeyChangedUnderItWritesNothing(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	key := store.Key("github", "renumber", "changed")
	f.run(key, "one")
	f.toLastSlot(c, key)
	cli := c.Client(t)
	f.b.hook = func(p, k string) error {
		if p == hookRepairLocked && k == key {
			got, err := cli.Get(t.Context(), f.b.meta.RecordKey(key))
			if err != nil || len(got.Kvs) != 1 {
				t.Fatalf("record: %v, %v", got, err)
			}
			if _, err := cli.Put(t.Context(), f.b.meta.RecordKey(key), string(got.Kvs[0].Value)); err != nil {
				t.Fatal(err)
			}
		}
		return nil
	}
	found := f.repairAll(f.b)
	f.b.hook = nil
	// The note tells a record that moved from a history written since
	// (TestARenumberOfAHistoryWrittenUnderItWritesNothing): mutant r21 of
	// the fleet sweep's list swapped the two.
	if len(found) != 1 || found[0].Repaired || !found[0].Remains || !strings.Contains(found[0].Repair, "the key changed while it was repaired (its record moved from revision ") {
		t.Fatalf("check --repair: %+v; want the history left, saying the key's record moved", found)
	}
	if seqs, _ := f.historyValues(c, key); !slices.Equal(seqs, []string{"fffffffffffffffe"}) {
		t.Fatalf("history after the lost renumber: %v; want it as it was", seqs)
	}
}

// A key whose history is written between the renumber's read and its
// commit, its record unmoved (an operator's etcdctl, a binary that takes
// no lock), is left as it is, saying that its history was written: the
// renumber is guarded by the history as it read it, and writes nothing
// when it lost.
func TestARenumberOfAHistoryWrittenUnderItWritesNothing(t *testing.T) {
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	key := store.Key("github", "renumber", "history-written")
	f.run(key, "one")
	vals := f.toLastSlot(c, key)
	cli := c.Client(t)
	// Another key of the history dir, below the ring (a hand's write).
	stray := f.prefix + "/history/" + key + "/0000000000000100"
	defer faults.Set(nil)
	faults.Set(func(p faults.Point) error {
		if p == faults.EtcdRenumberBeforeCommit {
			faults.Set(nil)
			if _, err := cli.Put(t.Context(), stray, vals[0]); err != nil {
				return err
			}
		}
		return nil
	})
	found := f.repairAll(f.b)
	faults.Set(nil)
	want := "left as is: the key changed while it was repaired (its history was written since it was read under the lock); run check again"
	if len(found) != 1 || found[0].Repaired || !found[0].Remains || found[0].Repair != want {
		t.Fatalf("check --repair: %+v; want the history left, Repair %q", found, want)
	}
	if seqs, _ := f.historyValues(c, key); !slices.Equal(seqs, []string{"0000000000000100", "fffffffffffffffe"}) {
		t.Fatalf("history after the lost renumber: %v; want it as it was, with the entry written under it", seqs)
	}
}

// With one member of three silent, check --repair numbers every full
// history again: the renumber's commit, sent to the silent member, is
// sent again to the next, as the walk's other writes are (§5l), and lands
// once. Where the silent member took the commit and only its answer is
// lost, the try sent again finds the key holding the history it would
// write: that renumber, landed. Sent once, a commit that met the silent
// member waited out the timeout, and the walk stopped, etcd unavailable.
func TestOneSilentMemberOfThreeStopsNoRenumber(t *testing.T) {
	etcdtest.Beside(t)
	for _, tc := range []struct {
		name string
		cut  func(*etcdtest.Proxy)
	}{
		{"silent", (*etcdtest.Proxy).Blackhole},
		{"answers lost", (*etcdtest.Proxy).BlackholeAnswers},
	} {
		t.Run(tc.name, func(t *testing.T) {
			etcdtest.PaceAttempts(t, 2*time.Second, func(p *etcdtest.Pace) {
				c := etcdtest.Start3(t)
				f := newFixture(t, c)
				const n = 6
				var keys []string
				for i := range n {
					k := store.Key("github", "renumber", fmt.Sprint("silent-", i))
					f.run(k, "one")
					f.toLastSlot(c, k)
					keys = append(keys, k)
				}
				b, ps := proxied(t, f, timeoutOn(p, f))
				tc.cut(ps[0])
				var found []store.Finding
				_, err := b.Check(t.Context(), CheckOptions{Repair: true}, func(fd store.Finding) error {
					found = append(found, fd)
					return nil
				})
				if err != nil {
					p.Errorf("check --repair with one member of three cut: %v", err)
				}
				for _, fd := range found {
					if !fd.Repaired {
						p.Errorf("check --repair: %s: %s", fd.Path, fd.Repair)
					}
				}
				for _, k := range keys {
					if seqs, _ := f.historyValues(c, k); !slices.Equal(seqs, []string{"0000000000000001"}) {
						p.Errorf("%s: history at %v, want at 1", k, seqs)
					}
				}
			})
		})
	}
}
