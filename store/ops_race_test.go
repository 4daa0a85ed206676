package store

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"sessdb/gates"
	"sessdb/internal/faults"
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
	s, root, quarantine := quarantineWithAWaiter(t)
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "one")
	sess, jobDir := mustResolve(t, s, testKey, localJob())
	want(t, sess, true, gates.Resumed)
	stage(t, jobDir, append(staged(t, jobDir), entryLine("two")...))

	type promoted struct {
		res PromoteResult
		err error
	}
	done := make(chan promoted, 1)
	aside, before := quarantine(func() {
		res, err := s.Promote(sess, PromoteRequest{PiVersion: testPi})
		done <- promoted{res, err}
	})
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

// quarantineWithAWaiter returns a store and a quarantine of testKey that
// starts waiter in a goroutine under the quarantine's lock, before its
// rename (at its first look at the clock), and goes on once the waiter
// waits for that lock. The quarantine returns the dir moved aside and its
// state as moved.
func quarantineWithAWaiter(t *testing.T) (*Store, string, func(waiter func()) (aside, before string)) {
	root := filepath.Join(t.TempDir(), "sessions")
	var armed atomic.Bool
	var hook func()
	s, err := New(root, Options{LockTimeout: 5 * time.Second, Now: func() time.Time {
		if armed.CompareAndSwap(true, false) {
			hook()
		}
		return quarantineNow
	}})
	if err != nil {
		t.Fatal(err)
	}
	return s, root, func(waiter func()) (string, string) {
		hook = func() {
			go waiter()
			waitForStack(t, "sessdb/db.flockUntil") // the waiter waits for the quarantine's flock
		}
		armed.Store(true)
		aside, err := s.Quarantine(testKey)
		if err != nil {
			t.Fatal(err)
		}
		return aside, treeState(t, filepath.Join(root, aside))
	}
}

// quarantineNow is quarantineWithAWaiter's store's clock.
var quarantineNow = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

// Two operators reaping one root at once: the second, waiting for the
// key's lock while the first removes it, must neither fail nor leave
// anything; the key is reaped once.
func TestTwoReapsAtOnce(t *testing.T) {
	s, root, clock := newTestStore(t, gates.Bounds{TTL: opsTTL})
	expiredKey(t, s, clock, testKey)
	type reaped struct {
		res ReapResult
		err error
	}
	done := make(chan reaped, 1)
	var once sync.Once
	faults.Set(func(p faults.Point) error {
		if p == faults.ReapBeforeRename {
			once.Do(func() {
				go func() {
					res, err := s.Reap(false)
					done <- reaped{res, err}
				}()
				waitForStack(t, "sessdb/db.lockKey") // the second reap waits for the first's lock
			})
		}
		return nil
	})
	first, err := s.Reap(false)
	second := <-done
	faults.Set(nil)
	if err != nil || !slices.Equal(first.Removed, []string{testKey}) {
		t.Fatalf("first reap = %+v, %v", first, err)
	}
	if second.err != nil || len(second.res.Failed)+len(second.res.Removed)+len(second.res.Refused) != 0 {
		t.Fatalf("second reap = %+v, %v", second.res, second.err)
	}
	if left, _ := os.ReadDir(root); len(left) != 0 {
		t.Fatalf("left under the root: %v", left)
	}
}

// check --repair --accept KEY waiting for the key's lock while another
// operator's --quarantine KEY held it must not record the transcript in
// the dir moved aside and say accepted of a key no resolve finds: it is
// refused, and the quarantine dir is left as it was moved.
func TestAcceptWaitingForAQuarantineRecordsNothing(t *testing.T) {
	s, root, quarantine := quarantineWithAWaiter(t)
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "one")
	if err := os.WriteFile(filepath.Join(root, testKey, TranscriptName), transcriptBytes(quarantineNow, "edited"), 0o600); err != nil {
		t.Fatal(err)
	}
	type accepted struct {
		res AcceptResult
		err error
	}
	done := make(chan accepted, 1)
	aside, before := quarantine(func() {
		res, err := s.Accept(testKey)
		done <- accepted{res, err}
	})
	a := <-done
	if a.err == nil {
		t.Fatalf("the waiting accept = %+v; want it refused, not recorded in %s", a.res, aside)
	}
	if after := treeState(t, filepath.Join(root, aside)); after != before {
		t.Fatalf("the quarantine dir changed under the accept:\n%s\nwas\n%s", after, before)
	}
}

// Two operators quarantining one key at once: the second waits for the
// lock of the dir the first moves aside, and must then not move whatever
// is at the key's name since (a key made again, whose lock it does not
// hold, a promotion perhaps mid-commit in it): it is refused, and the new
// key stays where resolves find it.
func TestSecondQuarantineNeverMovesAKeyMadeSince(t *testing.T) {
	root := filepath.Join(t.TempDir(), "sessions")
	now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	var calls atomic.Int32
	var hooks [2]func()
	s, err := New(root, Options{LockTimeout: 5 * time.Second, Now: func() time.Time {
		// The first two looks at the clock once armed: each quarantine's,
		// under the lock it took, before its rename.
		if n := calls.Add(-1); n >= 0 && n < 2 {
			hooks[1-n]()
		}
		return now
	}})
	if err != nil {
		t.Fatal(err)
	}
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "one")
	type quarantined struct {
		aside string
		err   error
	}
	done := make(chan quarantined, 1)
	hooks[0] = func() {
		go func() {
			aside, err := s.Quarantine(testKey)
			done <- quarantined{aside, err}
		}()
		waitForStack(t, "sessdb/db.LockExclusive") // the second waits for the first's lock
	}
	made := make(chan struct{})
	hooks[1] = func() {
		// The key made again by a job while the second had the old dir's lock.
		defer close(made)
		runJob(t, s, testKey, localJob(), PromoteRequest{}, "again")
	}
	calls.Store(2)
	first, err := s.Quarantine(testKey)
	if err != nil {
		t.Fatal(err)
	}
	second := <-done
	<-made
	if second.err == nil {
		t.Fatalf("the second quarantine moved %s (the first moved %s): a key made since, without its lock", second.aside, first)
	}
	sess, data := checkDescribed(t, s, root, testKey)
	want(t, sess, true, gates.Resumed)
	if !bytes.Contains(data, []byte("again")) {
		t.Fatal("the key made again does not resume its own promotion")
	}
}

// A reap that judged a key expired and, before it had the key's lock, saw
// it quarantined and made again by a job, must neither empty the
// quarantine dir (sessdb never removes one) nor move the key made since,
// whose lock it does not hold: it leaves both.
func TestReapOfAKeyQuarantinedBeforeItsLock(t *testing.T) {
	s, root, clock := newTestStore(t, gates.Bounds{TTL: opsTTL})
	expiredKey(t, s, clock, testKey)
	var aside, before string
	var once sync.Once
	faults.Set(func(p faults.Point) error {
		if p == faults.ReapBeforeLock {
			once.Do(func() {
				var err error
				if aside, err = s.Quarantine(testKey); err != nil {
					t.Error(err)
				}
				before = treeState(t, filepath.Join(root, aside))
				runJob(t, s, testKey, localJob(), PromoteRequest{}, "again")
			})
		}
		return nil
	})
	res, err := s.Reap(false)
	faults.Set(nil)
	if len(res.Removed) != 0 {
		t.Errorf("reap = %+v, %v; removed a key it did not hold", res, err)
	}
	if treeState(t, filepath.Join(root, aside)) != before {
		t.Errorf("the quarantine dir %s changed under the reap", aside)
	}
	sess, data := checkDescribed(t, s, root, testKey)
	want(t, sess, true, gates.Resumed)
	if !bytes.Contains(data, []byte("again")) {
		t.Fatal("the key made again does not resume its own promotion")
	}
}
