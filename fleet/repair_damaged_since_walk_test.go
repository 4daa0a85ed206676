package fleet

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// damageAtRepair has f's Backend, as check --repair takes up key (the
// walk done, the key's lock not yet had), put a value that does not
// decode at the etcd key at (an entry of key's history, or its record),
// by another client: what an operator's etcdctl, or another binary, does
// between the walk and the repair.
func (f *fixture) damageAtRepair(c *etcdtest.Cluster, key, at string) *bool {
	f.t.Helper()
	cli := c.Client(f.t)
	put := false
	f.b.hook = func(p, k string) error {
		if p == hookRepair && k == key && !put {
			put = true
			if _, err := cli.Put(context.Background(), at, "\xc1 not msgpack"); err != nil {
				f.t.Error(err)
			}
		}
		return nil
	}
	f.t.Cleanup(func() { f.b.hook = nil })
	return &put
}

// A repair whose read under the lock finds the key's history no longer
// decodes judges the key's orphans by the record alone, as reap's sweep
// does (stillOrphans), not by the entries that still decode: a file
// superseded long ago by one entry's date, whose record was promoted
// within the grace, is kept, as reap keeps it. The walk, which read the
// history whole, found the file an orphan by that entry's date; judged
// again by the entries that still decode (fleetcheck50's M4: the history
// read with the damage kept), the repair removed a file reap keeps.
func TestARepairThatFindsTheHistoryDamagedSinceTheWalkJudgesByTheRecordAsReapDoes(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	key := store.Key("github", "damaged since", "the walk")
	now := time.Now()
	f.now = now.Add(-3 * time.Hour)
	f.run(key, "one")
	first := f.recordFile(key)
	f.run(key, "two")
	second := f.recordFile(key)
	f.now = now.Add(-30 * time.Minute)
	f.run(key, "three")
	f.now = time.Time{}
	old := now.Add(-3 * time.Hour)
	for _, file := range []string{first, second} {
		if err := os.Chtimes(filepath.Join(f.dir, file), old, old); err != nil {
			t.Fatal(err)
		}
	}
	put := f.damageAtRepair(c, key, f.prefix+"/history/"+key+"/zzzz")
	found, _ := checkFindings(t, f.b, CheckOptions{Repair: true, Grace: time.Hour})
	if !*put {
		t.Fatal("the repair never took up the key")
	}
	o := found[first]
	if o.Kind != KindOrphan || o.Repaired || !o.Remains || o.Repair != "left: the key's record, read again under its lock, needs it now" {
		t.Errorf("gen 1, superseded 3h ago by gen 2's entry, the record (gen 3) promoted 30m ago, the history damaged since the walk: %+v; want it left, judged by the record's date", o)
	}
	if _, err := os.Lstat(filepath.Join(f.dir, first)); err != nil {
		t.Errorf("gen 1 after the repair: %v; want it kept", err)
	}
	res, err := f.b.Reap(context.Background(), ReapOptions{Grace: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(res.Swept, first) {
		t.Errorf("reap swept %q; want gen 1 kept, as the repair kept it", res.Swept)
	}
}

// A history in its last slot that stops decoding between the walk and
// the repair's read under the lock is not numbered again: the renumber
// needs the history, and the record read alone (GetRecord) has none. The
// walk's last-slot finding says what the repair found, the history left
// as it is. Numbered from the record alone (fleetcheck50's M8: the
// last-slot finding kept for the renumber), the finding said something
// else than the damage it was left for.
func TestALastSlotHistoryDamagedSinceTheWalkIsNotNumberedAgain(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	key := store.Key("github", "last slot damaged", "since the walk")
	f.run(key, "one")
	f.run(key, "two")
	f.toLastSlot(c, key)
	put := f.damageAtRepair(c, key, f.prefix+"/history/"+key+"/zzzz")
	var found []store.Finding
	if _, err := f.b.Check(t.Context(), CheckOptions{Repair: true}, func(fd store.Finding) error {
		found = append(found, fd)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if !*put {
		t.Fatal("the repair never took up the key")
	}
	slot := f.slotPath(key)
	i := slices.IndexFunc(found, func(fd store.Finding) bool { return fd.Path == slot })
	if i < 0 {
		t.Fatalf("findings %+v; want the last slot's, %s", found, slot)
	}
	fd := found[i]
	const want = "left as is: the key's record or history does not decode: "
	if fd.Repaired || !fd.Remains || !fd.RepairFailed || !strings.HasPrefix(fd.Repair, want) || !strings.Contains(fd.Repair, "zzzz") {
		t.Errorf("the last slot's finding, its history damaged since the walk: %+v; want Repair %q naming the entry, a repair that failed", fd, want+"…")
	}
	seqs, _ := f.historyValues(c, key)
	if !slices.Equal(seqs, []string{"fffffffffffffffd", "fffffffffffffffe", "zzzz"}) {
		t.Errorf("history after the repair: %v; want it as it was (the two entries in the last slots, the damaged one)", seqs)
	}
}

// A record that stops decoding between the walk and the repair's read
// under the lock judges nothing of the key: its orphans are not removed,
// each saying the record or history does not decode (the words the
// history's damage gives them), not the read's bare error (mutnew50's
// N31: the second read's damage taken for etcd's failure).
func TestARepairThatFindsTheRecordDamagedSinceTheWalkRemovesNothingSayingWhy(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	key := store.Key("github", "record damaged", "since the walk")
	f.now = time.Now().Add(-3 * time.Hour)
	f.run(key, "one")
	first := f.recordFile(key)
	f.run(key, "two")
	f.now = time.Time{}
	old := time.Now().Add(-3 * time.Hour)
	if err := os.Chtimes(filepath.Join(f.dir, first), old, old); err != nil {
		t.Fatal(err)
	}
	put := f.damageAtRepair(c, key, f.prefix+"/record/"+key)
	found, _ := checkFindings(t, f.b, CheckOptions{Repair: true, Grace: time.Hour})
	if !*put {
		t.Fatal("the repair never took up the key")
	}
	o := found[first]
	const want = "not removed: the key's record or history does not decode: "
	if o.Kind != KindOrphan || o.Repaired || !o.Remains || !o.RepairFailed || !strings.HasPrefix(o.Repair, want) {
		t.Errorf("gen 1, its record damaged since the walk: %+v; want it not removed, Repair %q", o, want+"…")
	}
	if _, err := os.Lstat(filepath.Join(f.dir, first)); err != nil {
		t.Errorf("gen 1 after the repair: %v; want it kept", err)
	}
}

// A repair that finds the history damaged since the walk reads the record
// alone (GetRecord). Stopped as that second read begins, it ends there,
// as at the first: the check is interrupted, its orphans not removed, each
// saying so, and the walk ends with the stop. Without the second read's
// stop (mutnew50's N43), the read's bare error ("get <key>: context
// canceled") was the orphans' words, and the check, its last key the
// stopped one, ended with no error: not interrupted.
func TestARepairStoppedAsItReadsTheRecordAloneSaysTheCheckWasInterrupted(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	key := store.Key("github", "stopped at", "the record alone")
	f.now = time.Now().Add(-3 * time.Hour)
	f.run(key, "one")
	first := f.recordFile(key)
	f.run(key, "two")
	f.now = time.Time{}
	old := time.Now().Add(-3 * time.Hour)
	if err := os.Chtimes(filepath.Join(f.dir, first), old, old); err != nil {
		t.Fatal(err)
	}
	put := f.damageAtRepair(c, key, f.prefix+"/history/"+key+"/zzzz")
	damage := f.b.hook
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	stops := 0
	f.b.hook = func(p, k string) error {
		if p == hookRepairAlone && k == key {
			stops++
			stop()
		}
		return damage(p, k)
	}
	found := map[string]store.Finding{}
	_, err := f.b.Check(ctx, CheckOptions{Repair: true, Grace: time.Hour}, func(fd store.Finding) error {
		found[fd.Path] = fd
		return nil
	})
	if !*put || stops != 1 {
		t.Fatalf("the repair's reads: history damaged %v, stopped %d times at the record read alone; want both once", *put, stops)
	}
	if !errors.Is(err, context.Canceled) {
		t.Errorf("check stopped as its repair read the record alone: %v; want context.Canceled", err)
	}
	o := found[first]
	const want = "not removed: check interrupted (context canceled) before the key's record was read again; run check again"
	if o.Kind != KindOrphan || o.Repaired || !o.Remains || o.Repair != want {
		t.Errorf("gen 1, the check stopped as its repair read the record alone: %+v; want it not removed, Repair %q", o, want)
	}
	if _, err := os.Lstat(filepath.Join(f.dir, first)); err != nil {
		t.Errorf("gen 1 after the stopped repair: %v; want it kept", err)
	}
}
