package fleet

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// heldPromotion is a first promotion of a key with no record, held
// between its file and its commit (its commit, guarded by "no record",
// may land whenever the key has none): file is the file it wrote, aged
// by the test past a short grace (a commit slow in coming: a member slow
// to answer, a try sent again), and finish lets it commit.
type heldPromotion struct {
	file   string
	finish func() (store.PromoteResult, error)
}

func holdFirstPromotion(f *fixture, key, marker string) heldPromotion {
	f.t.Helper()
	sess, _ := f.job(key, marker)
	if sess.Resume {
		f.t.Fatalf("%s resumes: want a key with no record", key)
	}
	w := f.open()
	staged, release := make(chan struct{}), make(chan struct{})
	w.hook = func(p, k string) error {
		if p == hookCommit && k == key {
			close(staged)
			<-release
		}
		return nil
	}
	type answer struct {
		res store.PromoteResult
		err error
	}
	done := make(chan answer, 1)
	go func() {
		res, err := store.NewOn(w, store.Options{}).Promote(sess, store.PromoteRequest{PiVersion: testJob.PiVersion})
		done <- answer{res, err}
	}()
	<-staged
	files := f.files(key)
	var file string
	for _, n := range files {
		if n != f.recordFile(key) && n != key+"/" {
			file = n
		}
	}
	if file == "" {
		f.t.Fatalf("the held promotion's file is not among %v", files)
	}
	old := time.Now().Add(-5 * time.Second)
	if err := os.Chtimes(filepath.Join(f.dir, file), old, old); err != nil {
		f.t.Fatal(err)
	}
	return heldPromotion{file: file, finish: func() (store.PromoteResult, error) {
		close(release)
		a := <-done
		return a.res, a.err
	}}
}

// A key another reaper removes (its own TTL shorter) after this reap took
// its snapshot of the records, and that a job then promotes anew: the
// promotion's file is of a generation no higher than the record the
// snapshot holds, so the listing takes it for a superseded one past a
// short grace, and the record read again before the sweep is none. The
// file is young, its commit may still land (a key with no record takes a
// first promotion): it must be kept through the in-flight window whatever
// the grace, as the docs promise. Found by a review: the read again
// judged the file with no mtime, as if a record could only move to a
// higher generation, and swept it; the promotion then landed, promoted,
// naming a file that was gone, and the key resolved transcript-replaced.
func TestReapKeepsAPromotionInFlightOfAKeyRemovedSinceItsSnapshot(t *testing.T) {
	etcdtest.Beside(t)
	f := newFixture(t, etcdtest.Start1(t))
	expired, key := store.Key("github", "gone-since", "expired"), store.Key("github", "gone-since", "key")
	f.now = time.Now().Add(-30 * 24 * time.Hour)
	f.run(expired, "old")
	f.now = time.Now().Add(-3 * time.Hour)
	f.run(key, "a")
	f.now = time.Time{}

	other, r := f.open(), f.open()
	var held heldPromotion
	r.hook = func(p, k string) error {
		if p == hookReapDelete && k == expired {
			// Between this reap's snapshot and its sweep: another
			// reaper, whose TTL is an hour, removes the key, and a job
			// that then finds it absent promotes it.
			if gone, err := other.reapKey(context.Background(), key, time.Hour, time.Now, false); !gone || err != nil {
				t.Errorf("the other reaper's removal of the key: %v, %v", gone, err)
			}
			held = holdFirstPromotion(f, key, "b")
		}
		return nil
	}
	res, err := r.Reap(t.Context(), ReapOptions{TTL: 14 * 24 * time.Hour, Grace: time.Second})
	if err != nil || !slices.Equal(res.Removed, []string{expired}) || held.file == "" {
		t.Fatalf("reap = %+v, %v", res, err)
	}
	swept := slices.Contains(res.Swept, held.file)
	p, err := held.finish()
	if err != nil || !p.Promoted || p.Gen != 1 {
		t.Fatalf("the held promotion = %+v, %v", p, err)
	}
	if swept {
		t.Fatalf("reap swept %s, the file of a promotion in flight (swept: %v), which then landed naming it", held.file, res.Swept)
	}
	f.holds(key, "b", 1)
}

// As above, for check --repair: a key whose record another removes
// (here an operator's etcdctl del) after check's snapshot, while a first
// promotion of it, begun before another's record was made and judged by
// the snapshot a superseded generation past a short grace, is still to
// commit. The repair reads the record again under the key's lock, finds
// none, and must keep the young file.
func TestRepairKeepsAPromotionInFlightOfAKeyRemovedSinceItsSnapshot(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	key := store.Key("github", "gone-since", "repair")
	held := holdFirstPromotion(f, key, "b")
	// Another worker's first promotion lands first; it is ten seconds
	// old by the time check runs (its clock stands in for the wait).
	f.now = time.Now().Add(-10 * time.Second)
	f.run(key, "a")
	f.now = time.Time{}

	var removed []string
	var left string // the repair line of the held promotion's file
	r := f.open()
	r.hook = func(p, k string) error {
		if p == hookRepair && k == key {
			if _, err := c.Client(t).Delete(context.Background(), f.prefix+"/record/"+key); err != nil {
				t.Error(err)
			}
		}
		return nil
	}
	_, err := r.Check(t.Context(), CheckOptions{Repair: true, Grace: time.Second}, func(fd store.Finding) error {
		if fd.Repaired {
			removed = append(removed, fd.Path)
		}
		if fd.Path == held.file {
			left = fd.Repair
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	p, err := held.finish()
	if err != nil || !p.Promoted || p.Gen != 1 {
		t.Fatalf("the held promotion = %+v, %v", p, err)
	}
	if slices.Contains(removed, held.file) {
		t.Fatalf("check --repair removed %s, the file of a promotion in flight (removed: %v), which then landed naming it", held.file, removed)
	}
	if !strings.Contains(left, "in-flight window") {
		t.Errorf("the repair line of the file kept: %q; want it to say why (the in-flight window)", left)
	}
	f.holds(key, "b", 1)
}

// A record set back by hand to a generation below files the key still
// holds (an operator's etcdctl put of the value it had, an etcd restored
// from a backup): the file it names is its own, kept by every reap
// whatever its generation and age, and the key resumes it. The newer
// generations are files no record names; past the grace period by their
// mtime (and the in-flight window) a reap sweeps them, as any orphan.
func TestReapKeepsTheFileOfARecordSetBack(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	key := store.Key("github", "set-back", "key")
	f.run(key, "a")
	resp, err := c.Client(t).Get(t.Context(), f.prefix+"/record/"+key)
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("the record as of gen 1: %v, %v", resp, err)
	}
	first := f.recordFile(key)
	f.run(key, "b")
	f.run(key, "c")
	if _, err := c.Client(t).Put(t.Context(), f.prefix+"/record/"+key, string(resp.Kvs[0].Value)); err != nil {
		t.Fatal(err)
	}
	later := func() time.Time { return time.Now().Add(2 * time.Hour) }
	for _, o := range []ReapOptions{{Now: later}, {Now: later, Grace: time.Second}} {
		r, err := f.b.Reap(t.Context(), o)
		if err != nil || slices.Contains(r.Swept, first) {
			t.Fatalf("reap (grace %v) = %+v, %v; swept the file the record names", o.Grace, r, err)
		}
	}
	if got := f.files(key); !slices.Equal(got, []string{first}) {
		t.Errorf("files %v; want only %s, the one the record names", got, first)
	}
	f.holds(key, "a", 1)
}
