package fleet

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// An empty key dir listed as an orphan, into which a first promotion
// lands before the sweep's rmdir, is no failure: the rmdir refuses a dir
// that is not empty (ENOTEMPTY), the key is the promotion's, and the reap
// exits 0, as a sessions root's reap of an empty key dir made into a key
// meanwhile does (reapEmptyKeyDir). Before, the refusal was the key's
// failure (Skipped, exit 1) since a failed removal fails its key.
func TestReapSweepOfAnEmptyKeyDirAKeyLandsInIsNoFailure(t *testing.T) {
	etcdtest.Beside(t)
	f := newFixture(t, etcdtest.Start1(t))
	key := store.Key("github", "reap-empty", "landed")
	f.run(store.Key("github", "reap-empty", "other"), "other") // the dir's mark
	kd := filepath.Join(f.dir, key)
	if err := os.Mkdir(kd, 0o700); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-30 * 24 * time.Hour)
	if err := os.Chtimes(kd, old, old); err != nil {
		t.Fatal(err)
	}
	landed := false
	f.b.hook = func(p, k string) error {
		if p == hookSweep && k == key && !landed {
			landed = true
			f.run(key, "landed")
		}
		return nil
	}
	res, err := f.b.Reap(t.Context(), ReapOptions{})
	f.b.hook = nil
	if !landed {
		t.Fatalf("the sweep never went for the empty key dir: %+v, %v", res, err)
	}
	if err != nil || len(res.Skipped) != 0 || len(res.Swept) != 0 {
		t.Fatalf("reap = %+v, %v; want nothing swept and nothing failed", res, err)
	}
	f.holds(key, "landed", 1)
}
