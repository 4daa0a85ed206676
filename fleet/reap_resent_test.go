package fleet

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// A reap's delete that landed, its answer a context error etcd's client
// then sent again itself, meets the key gone: that is this reap's
// removal, reported in Removed, and the key's file goes with it, as
// after a lost answer (TestReapRidesOutALeaderChangeOnItsDelete).
func TestAReapDeleteTheClientSentAgainIsItsRemoval(t *testing.T) {
	etcdtest.Beside(t)
	for _, code := range []codes.Code{codes.DeadlineExceeded, codes.Canceled} {
		t.Run(code.String(), func(t *testing.T) {
			c := etcdtest.Start(t, etcdtest.Options{Members: 1, InProcess: true})
			f := newFixture(t, c)
			f.now = time.Now().Add(-30 * 24 * time.Hour)
			key := store.Key("github", "delete-resent", code.String())
			f.run(key, "old")
			f.now = time.Time{}
			file := f.recordFile(key)
			t.Cleanup(func() { c.LoseNextAs(resentTxn, 0, 0, code) })
			f.b.hook = func(point, k string) error {
				if point == hookReapDelete && k == key {
					c.LoseNextAs(resentTxn, 0, 1, code)
				}
				return nil
			}
			r, err := f.b.Reap(t.Context(), ReapOptions{TTL: 14 * 24 * time.Hour})
			if err != nil || len(r.Removed) != 1 || len(r.Gone) != 0 {
				t.Fatalf("reap: %+v, %v; want the key removed by this reap", r, err)
			}
			if f.recordFile(key) != "" {
				t.Errorf("the key still has a record")
			}
			if _, err := os.Lstat(filepath.Join(f.dir, file)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the key's file %s: %v, want it removed with its key", file, err)
			}
		})
	}
}
