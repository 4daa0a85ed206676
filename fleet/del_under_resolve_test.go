package fleet

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"sessdb/gates"
	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// A key whose record an operator removes by hand (etcdctl del, of the
// record alone or with its history) under a resolve that read it, and
// whose file a reap then sweeps by its age (no record needs it: etcd does
// not date the del, so no grace runs from it), is absent to that resolve,
// as a key reaped under it is: a named cold start with no base, never a
// torn copy, at the open, at the first line's read and under the copy
// (the reads failing, as NFS's ESTALE does once another host removed the
// file). Tests only: what the docs say of a key's files once it has no
// record.
func TestAKeyDeletedByHandUnderAResolveIsAbsent(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	for _, point := range []string{hookOpen, hookHeader, hookSource} {
		for _, history := range []bool{false, true} {
			name := point
			if history {
				name += "/with-history"
			}
			t.Run(name, func(t *testing.T) {
				f := newFixture(t, c)
				key := store.Key("github", "del-under-resolve", name)
				f.run(key, "one")
				file := f.recordFile(key)
				cli := c.Client(t)
				done := false
				f.b.hook = func(p, k string) error {
					if p != point || k != key || done {
						return nil
					}
					done = true
					if _, err := cli.Delete(context.Background(), f.prefix+"/record/"+key); err != nil {
						t.Error(err)
					}
					if history {
						if _, err := cli.Delete(context.Background(), f.prefix+"/history/"+key+"/", clientv3.WithPrefix()); err != nil {
							t.Error(err)
						}
					}
					old := time.Now().Add(-2 * time.Hour)
					if err := os.Chtimes(filepath.Join(f.dir, file), old, old); err != nil {
						t.Error(err)
					}
					res, err := f.b.Reap(context.Background(), ReapOptions{})
					if err != nil || len(res.Swept) != 1 || res.Swept[0] != file {
						t.Errorf("reap after the del: %+v, %v; want %s swept", res, err, file)
					}
					if point == hookOpen {
						return nil
					}
					return errors.New("stale")
				}
				sess, jobDir := resolveOn(t, f.s, key)
				f.b.hook = nil
				if !done {
					t.Fatalf("the resolve never reached %s", point)
				}
				if sess.Resume || sess.Reason != gates.Absent || sess.Base != (store.Base{}) || len(stagedOf(t, jobDir)) != 0 {
					t.Fatalf("a resolve whose key's record was deleted by hand and file swept at %s: %+v; want absent, no base, nothing staged", point, sess)
				}
			})
		}
	}
}
