package fleet

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"sessdb/fleet/etcdmeta"
	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// check --repair whose caller cancels it after the key's record was read
// again under its lock, as it numbers the key's history again, stops
// there: it returns ctx's error, the history left saying the check was
// interrupted, and removes none of the key's orphans, which say so too
// (repair's doc; the walk stops, no orphan removed). Before (mutant r22
// of the fleet sweep's list, the renumber's `return ctx.Err()` ->
// `return nil`), no test cancelled a repair at its renumber: the mutant
// went on to remove the key's orphan after the caller had stopped it.
func TestARepairCancelledAtItsRenumberRemovesNoOrphan(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	key := store.Key("github", "renumber", "cancelled")
	f.runExpired(key, "old") // promoted 30 days ago: its old files are past the grace period
	f.toLastSlot(c, key)
	orphan := f.oldOrphan(key)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	f.b.hook = func(p, k string) error {
		if p == hookRepairLocked && k == key {
			cancel()
		}
		return nil
	}
	var found []store.Finding
	_, err := f.b.Check(ctx, CheckOptions{Repair: true}, func(fd store.Finding) error {
		found = append(found, fd)
		return nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("check --repair cancelled at its renumber = %v; want context.Canceled", err)
	}
	kinds := map[store.Kind]store.Finding{}
	for _, fd := range found {
		kinds[fd.Kind] = fd
	}
	o, ok := kinds[KindOrphan]
	if len(found) != 2 || !ok || o.Repaired || !o.Remains || !strings.HasPrefix(o.Repair, "not removed: check interrupted") {
		t.Errorf("findings: %+v; want the last slot's and the orphan's, the orphan not removed, interrupted", found)
	}
	if _, err := os.Stat(orphan); err != nil {
		t.Errorf("the orphan: %v; want it left", err)
	}
}

// check --repair that loses etcd after the key's record was read again
// under its lock, as it numbers the key's history again, stops the walk
// with etcd unavailable and removes none of the key's orphans, which say
// why (repair's doc: etcd not answering is returned, after the key's
// findings say so; every key left would wait out the request timeout in
// turn). Before (mutant r23 of the fleet sweep's list, the renumber's
// `return unavailable(err)` -> `return nil`), no test lost etcd at a
// renumber: the mutant went on, removed the orphan and walked on.
func TestARepairThatLosesEtcdAtItsRenumberStops(t *testing.T) {
	etcdtest.Beside(t)
	// The request timeout, short so that the lost renumber fails soon, is
	// paced by the machine (etcdtest.Pace): a fixed 200 ms bounded the
	// repair's lock and reads before the renumber too, which took longer
	// at a load of 26 (1 of 4 runs failed there).
	etcdtest.PaceAttempts(t, 200*time.Millisecond, func(p *etcdtest.Pace) {
		c := etcdtest.Start1(t)
		f := newFixture(t, c)
		key := store.Key("github", "renumber", "outage")
		f.runExpired(key, "old")
		f.toLastSlot(c, key)
		orphan := f.oldOrphan(key)
		timeout := timeoutOn(p, f)
		b := f.open(func(cfg *Config) { cfg.RequestTimeout = timeout })
		connected(t, b)
		b.hook = func(h, k string) error {
			if h == hookRepairLocked && k == key {
				p.End() // the rounds beside it would time the outage
				c.Stop(0)
			}
			return nil
		}
		var found []store.Finding
		_, err := b.Check(t.Context(), CheckOptions{Repair: true, Workers: 1}, func(fd store.Finding) error {
			found = append(found, fd)
			return nil
		})
		if !errors.Is(err, etcdmeta.ErrUnavailable) {
			p.Errorf("check --repair that lost etcd at its renumber = %v; want etcd unavailable", err)
		}
		kinds := map[store.Kind]store.Finding{}
		for _, fd := range found {
			kinds[fd.Kind] = fd
		}
		o, ok := kinds[KindOrphan]
		if len(found) != 2 || !ok || o.Repaired || !o.Remains || !strings.HasPrefix(o.Repair, "not removed: ") {
			p.Errorf("findings: %+v; want the last slot's and the orphan's, the orphan not removed", found)
		}
		if _, err := os.Stat(orphan); err != nil {
			p.Errorf("the orphan: %v; want it left", err)
		}
	})
}
