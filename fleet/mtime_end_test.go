package fleet

import (
	"math"
	"path/filepath"
	"testing"
	"time"

	"sessdb/gates"
	"sessdb/internal/etcdtest"
	"sessdb/internal/testfs"
	"sessdb/store"
)

// A generation whose file a tmpfs dates at the end of time (utimensat of
// 2^63-1 s reads back so; a clock that is off) is a future, not expired:
// the resolve resumes the key, dump judges it so, and reap keeps it, as a
// sessions root's key dated so is (store's
// TestALegacyKeyDatedAtTheEndOf64BitsIsNotExpired). The resolve and dump
// read the mtime through os.FileInfo, whose time.Unix wraps such a count
// to the far past, where reap read it through fsat.ModTime. Run on
// /dev/shm: ext4 clamps the mtime to 2446, which no wrap reaches.
func TestAGenerationDatedAtTheEndOf64BitsIsNotExpired(t *testing.T) {
	etcdtest.Beside(t)
	f := &fixture{t: t, c: etcdtest.Start1(t), prefix: "/sessdb/" + randHex(8), dir: testfs.TmpfsDir(t)}
	f.b = f.open()
	f.s = store.NewOn(f.b, store.Options{Now: f.clock, Bounds: gates.Bounds{TTL: 14 * 24 * time.Hour}})
	key := store.Key("github", "mtime-end", "fleet")
	f.run(key, "one")
	p := filepath.Join(f.dir, f.recordFile(key))
	testfs.Date(t, p, math.MaxInt64)
	r := f.dumpOne(key, InspectOptions{Job: &testJob, Bounds: gates.Bounds{TTL: 14 * 24 * time.Hour}})
	if r.Verdict == nil || r.Verdict.Reason != string(gates.Resumed) {
		t.Errorf("dump --as-job of a generation dated at the end of time: verdict %+v; want resumed", r.Verdict)
	}
	if r.Transcript == nil || !r.Transcript.ModTime.After(time.Now()) {
		t.Errorf("dump's transcript mtime: %+v; want the far future", r.Transcript)
	}
	if sess, _ := resolveOn(t, f.s, key); !sess.Resume {
		t.Errorf("resolve of a generation dated at the end of time: %s; want resumed (a future is not expired)", sess.Reason)
	}
	res, err := f.b.Reap(t.Context(), ReapOptions{TTL: 14 * 24 * time.Hour})
	if err != nil || len(res.Removed) != 0 || res.Kept != 1 {
		t.Fatalf("reap: %+v, %v; want the key kept", res, err)
	}
}
