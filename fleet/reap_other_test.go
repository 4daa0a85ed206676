package fleet

import (
	"slices"
	"testing"
	"time"

	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// A reap whose one delete of an expired key loses its compare to a key
// already gone (removed since the reap judged it under its lock: an
// operator's etcdctl del, another reaper after this one's lock ended)
// does not report the key removed: its delete, answered, did not land,
// and only a try whose answer was lost makes a lost compare on a gone key
// this reap's removal (delete's doc). Before (mutant p25 of the fleet
// sweep's list, `unsure && ce.Current.Rev == 0` without `unsure`), no
// test removed a key under a reap's delete: the mutant reported another's
// removal as its own.
func TestReapDoesNotReportAKeyRemovedByAnotherUnderItsDelete(t *testing.T) {
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	key := store.Key("github", "reap-other", "removed")
	f.runExpired(key, "old")
	cli := c.Client(t)
	f.b.hook = func(p, k string) error {
		if p == hookReapDelete && k == key {
			if _, err := cli.Delete(t.Context(), f.b.meta.RecordKey(key)); err != nil {
				return err
			}
		}
		return nil
	}
	res, err := f.b.Reap(t.Context(), ReapOptions{TTL: 14 * 24 * time.Hour})
	if err != nil || slices.Contains(res.Removed, key) || len(res.Skipped) != 0 {
		t.Fatalf("reap of a key removed by another under its delete = %+v, %v; want it not reported removed", res, err)
	}
}
