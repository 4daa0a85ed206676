package fleet

import (
	"os"
	"path/filepath"
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
	etcdtest.Beside(t)
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

// A key another removes between this reap's listing and its delete
// (another reaper, which took the key's lock first; an operator's etcdctl
// del) is neither kept nor this reap's removal: it is in Gone, as a
// sessions root's reap skips a key dir another reap removed under it
// (store.ReapResult: skipped with why, not failed, not kept). Removed
// before this reap's lock (its read under the lock finds no record) or
// under its delete (the delete, answered, loses its compare to no
// record), each is counted so. Before, each was counted Kept: "Kept:1"
// of a key no longer there.
func TestAReapCountsAKeyRemovedByAnotherAsGoneNotKept(t *testing.T) {
	etcdtest.Beside(t)
	for _, when := range []string{"before its lock", "under its delete"} {
		t.Run(when, func(t *testing.T) {
			c := etcdtest.Start1(t)
			f := newFixture(t, c)
			first, gone := store.Key("github", "reap-gone", "1"), store.Key("github", "reap-gone", "2")
			if gone < first {
				first, gone = gone, first
			}
			f.runExpired(first, "old")
			f.runExpired(gone, "old")
			cli := c.Client(t)
			// Removed under the reap as another reaper removes a key: its
			// record, then its file.
			remove := func() error {
				if _, err := cli.Delete(t.Context(), f.b.meta.RecordKey(gone)); err != nil {
					return err
				}
				return os.RemoveAll(filepath.Join(f.dir, gone))
			}
			f.b.hook = func(p, k string) error {
				switch {
				case p != hookReapDelete:
				case when == "before its lock" && k == first, when == "under its delete" && k == gone:
					return remove()
				}
				return nil
			}
			res, err := f.b.Reap(t.Context(), ReapOptions{TTL: 14 * 24 * time.Hour})
			if err != nil || !slices.Equal(res.Removed, []string{first}) || !slices.Equal(res.Gone, []string{gone}) || res.Kept != 0 || len(res.Skipped) != 0 {
				t.Fatalf("reap of a key another removed %s = %+v, %v; want %s removed, %s gone, none kept or skipped", when, res, err, first, gone)
			}
		})
	}
}
