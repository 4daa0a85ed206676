package fleet

import (
	"path/filepath"
	"slices"
	"testing"
	"time"

	"sessdb/gates"
	"sessdb/internal/etcdtest"
	"sessdb/internal/testfs"
	"sessdb/store"
)

// A generation whose file is dated at the very first instant of year 1
// (0001-01-01T00:00:00Z, which a tmpfs keeps) is aged by that mtime as a
// file dated a second later is: its record's date is far more than the
// in-flight window after the file's write, so the key counts from the
// write (lastPromotion) and is expired to a resolve, to dump and to reap
// alike. Before, that instant is Go's zero time, which lastPromotion took
// for "no mtime known": the key resumed and reap kept it, while its
// neighbour dated one second later was expired and removed. Run on
// /dev/shm: ext4 clamps the mtime to 1901.
func TestAGenerationDatedAtTheFirstInstantOfYearOneIsAgedByIt(t *testing.T) {
	etcdtest.Beside(t)
	f := &fixture{t: t, c: etcdtest.Start1(t), prefix: "/sessdb/" + randHex(8), dir: testfs.TmpfsDir(t)}
	f.b = f.open()
	ttl := 14 * 24 * time.Hour
	f.s = store.NewOn(f.b, store.Options{Now: f.clock, Bounds: gates.Bounds{TTL: ttl}})
	yearOne := time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	keys := map[string]int64{
		store.Key("github", "mtime-year-1", "first-instant"): yearOne,
		store.Key("github", "mtime-year-1", "a-second-on"):   yearOne + 1,
	}
	for key, sec := range keys {
		f.run(key, "one")
		testfs.Date(t, filepath.Join(f.dir, f.recordFile(key)), sec)
	}
	for key, sec := range keys {
		if sess, _ := resolveOn(t, f.s, key); sess.Resume || sess.Reason != gates.Expired {
			t.Errorf("resolve of a generation dated %d s: %s (resume %v); want expired", sec, sess.Reason, sess.Resume)
		}
		r := f.dumpOne(key, InspectOptions{Job: &testJob, Bounds: gates.Bounds{TTL: ttl}})
		if r.Verdict == nil || r.Verdict.Reason != string(gates.Expired) {
			t.Errorf("dump --as-job of a generation dated %d s: verdict %+v; want expired", sec, r.Verdict)
		}
	}
	res, err := f.b.Reap(t.Context(), ReapOptions{TTL: ttl})
	if err != nil || len(res.Removed) != 2 || res.Kept != 0 {
		t.Fatalf("reap: %+v, %v; want both keys removed", res, err)
	}
	for key := range keys {
		if !slices.Contains(res.Removed, key) {
			t.Errorf("reap kept %s (dated %d s)", key, keys[key])
		}
	}
}
