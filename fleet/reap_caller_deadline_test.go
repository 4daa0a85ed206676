package fleet

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// A reap's delete, once sent, is finished whatever the caller's context
// does (context.WithoutCancel), within the request timeout: a try whose
// answer was lost is tried again, and the retry's compare, finding no
// record, is the key removed, its file with it. The caller's deadline
// passing under that first try (served, its answer lost) is the caller's
// context ending too: it was read through WithoutCancel by the fleet's
// backoff (callerctx.Deadline), which then said there was no time for
// another try, and the delete that had landed was reported as etcd
// unavailable, the key not removed, its file left for a later sweep.
func TestAReapDeleteSentIsFinishedPastTheCallersDeadline(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start(t, etcdtest.Options{Members: 1, InProcess: true})
	f := newFixture(t, c)
	f.now = time.Now().Add(-30 * 24 * time.Hour)
	key := store.Key("github", "delete-deadline", "lost")
	f.run(key, "old")
	f.now = time.Time{}
	file := f.recordFile(key)
	b := f.open(func(cfg *Config) { cfg.RequestTimeout = 10 * time.Second })
	connected(t, b)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
	defer cancel()
	deadline, _ := ctx.Deadline()
	reached := false
	b.hook = func(point, k string) error {
		if point == hookReapDelete && k == key {
			reached = time.Until(deadline) > 0
			// The delete lands; before its answer is lost, the
			// caller's deadline passes.
			c.LoseNextAsAfter("/etcdserverpb.KV/Txn", 0, 1, codes.OK, func() {
				time.Sleep(time.Until(deadline) + 100*time.Millisecond)
			})
		}
		return nil
	}
	r, err := b.Reap(ctx, ReapOptions{TTL: 14 * 24 * time.Hour})
	if !reached {
		t.Skipf("the reap reached its delete past the caller's deadline (a loaded machine): %+v, %v", r, err)
	}
	if !slices.Contains(r.Removed, key) {
		t.Errorf("reap: %+v, %v; want %s removed (its delete landed)", r, err, key)
	}
	if _, serr := os.Stat(filepath.Join(f.dir, file)); !errors.Is(serr, os.ErrNotExist) {
		t.Errorf("%s's file %s: %v; want it removed with its key", key, file, serr)
	}
}

// check --repair's renumber, once sent, is finished whatever the caller's
// context does, as a reap's delete is: its commit served and its answer
// lost while the caller's deadline passed is sent again, finds its
// entries in place, and the finding says the history was numbered again.
// The fleet's backoff read the caller's deadline through WithoutCancel,
// and the renumber that had landed stopped on etcd unavailable.
func TestARepairRenumberSentIsFinishedPastTheCallersDeadline(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start(t, etcdtest.Options{Members: 1, InProcess: true})
	f := newFixture(t, c)
	key := store.Key("github", "renumber-deadline", "lost-answer")
	f.run(key, "one")
	f.run(key, "two")
	f.toLastSlot(c, key)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
	defer cancel()
	deadline, _ := ctx.Deadline()
	reached := false
	f.b.hook = func(p, k string) error {
		if p == hookRepairLocked && k == key {
			reached = time.Until(deadline) > 0
			// The renumber's read is the next Txn, its commit the one
			// after: it lands, and before its answer is lost the
			// caller's deadline passes.
			c.LoseNextAsAfter("/etcdserverpb.KV/Txn", 1, 1, codes.OK, func() {
				time.Sleep(time.Until(deadline) + 100*time.Millisecond)
			})
		}
		return nil
	}
	var found []store.Finding
	_, err := f.b.Check(ctx, CheckOptions{Repair: true}, func(fd store.Finding) error {
		found = append(found, fd)
		return nil
	})
	f.b.hook = nil
	if !reached {
		t.Skipf("the repair reached its renumber past the caller's deadline (a loaded machine): %+v, %v", found, err)
	}
	if len(found) != 1 || !found[0].Repaired {
		t.Errorf("check --repair: %+v, %v; want the history numbered again (its renumber landed)", found, err)
	}
}
