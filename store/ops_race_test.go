package store

import (
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"sessdb/gates"
)

// A promotion that opened the key dir and was waiting for its lock while
// check --repair --quarantine held it must not land in the dir moved
// aside and report promoted: no resolve finds that dir, so the
// acknowledged run would be lost to the key, and the key split in two (its
// transcript resuming nowhere, the quarantine holding a generation it did
// not hold when the operator moved it). The waiting promotion fails
// instead, as one waiting for a reap does, and the quarantine dir is left
// as it was moved.
func TestQuarantineFailsAWaitingPromotion(t *testing.T) {
	root := filepath.Join(t.TempDir(), "sessions")
	now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	var armed atomic.Bool
	var hook func()
	s, err := New(root, Options{LockTimeout: 5 * time.Second, Now: func() time.Time {
		if armed.CompareAndSwap(true, false) {
			hook() // Quarantine's first look at the clock: under the key's lock, before its rename
		}
		return now
	}})
	if err != nil {
		t.Fatal(err)
	}
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "one")
	sess, jobDir := mustResolve(t, s, testKey, localJob())
	want(t, sess, true, gates.Resumed)
	stage(t, jobDir, append(staged(t, jobDir), entryLine("two")...))

	type promoted struct {
		res PromoteResult
		err error
	}
	done := make(chan promoted, 1)
	hook = func() {
		go func() {
			res, err := s.Promote(sess, PromoteRequest{PiVersion: testPi})
			done <- promoted{res, err}
		}()
		waitForStack(t, "sessdb/db.flockUntil") // the promotion waits for the quarantine's flock
	}
	armed.Store(true)
	aside, err := s.Quarantine(testKey)
	if err != nil {
		t.Fatal(err)
	}
	before := treeState(t, filepath.Join(root, aside))
	p := <-done
	if p.err == nil || p.res.Promoted {
		t.Fatalf("the waiting promotion = %+v, %v; want it failed, not promoted into %s", p.res, p.err, aside)
	}
	if after := treeState(t, filepath.Join(root, aside)); after != before {
		t.Fatalf("the quarantine dir changed under the promotion:\n%s\nwas\n%s", after, before)
	}
	if _, err := os.Lstat(filepath.Join(root, testKey)); err == nil {
		t.Fatal("the key dir is back after its quarantine")
	}
}
