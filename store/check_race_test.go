package store

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"sessdb/db"
	"sessdb/gates"
	"sessdb/internal/faults"
)

// check without --repair that opened a legacy key (no meta.db, so no
// lock to take) while the key's first promotion began must not report the
// promotion's temp, written under the lock that promotion now holds, as a
// stray temp: a writer's in-flight state is not damage, and an operator
// would remove it (exit 3 says problems found). What check reports of the
// key is its state after the promotion, read under the lock.
func TestCheckOfALegacyKeyDuringItsFirstPromotion(t *testing.T) {
	s, root, clock := newTestStore(t, gates.Bounds{})
	writeLegacy(t, root, testKey, map[string]string{TranscriptName: string(transcriptBytes(clock.now, "legacy turn")), "pi-version": testPi})
	sess, jobDir := mustResolve(t, s, testKey, localJob())
	want(t, sess, true, gates.Resumed)
	stage(t, jobDir, append(staged(t, jobDir), entryLine("two")...))

	staging, release, checked := make(chan struct{}), make(chan struct{}), make(chan struct{})
	promoted := make(chan error, 1)
	var once, stop sync.Once
	faults.Set(func(p faults.Point) error {
		switch p {
		case faults.CheckAfterKeyOpen:
			once.Do(func() {
				go func() {
					res, err := s.Promote(sess, PromoteRequest{PiVersion: testPi})
					if err == nil && !res.Promoted {
						err = errors.New("not promoted: " + string(res.Reason))
					}
					promoted <- err
				}()
				<-staging // the promotion's temp written, under its lock
				go releaseWhenWaiting(checked, release)
			})
		case faults.PromoteAfterTempWrite:
			stop.Do(func() {
				close(staging)
				<-release
			})
		}
		return nil
	})
	t.Cleanup(func() { faults.Set(nil) })
	found := checkFindings(t, s, CheckOptions{})
	close(checked)
	if err := <-promoted; err != nil {
		t.Fatal(err)
	}
	for _, f := range found {
		if f.Kind == KindStrayTemp || f.Severity == SeverityProblem {
			t.Errorf("check during a first promotion found %s %s: %s", f.Kind, f.Path, f.Detail)
		}
	}
	if names, _ := os.ReadDir(filepath.Join(root, testKey)); len(names) == 0 {
		t.Fatal("the key dir is empty")
	}
}

// releaseWhenWaiting closes release once some goroutine waits for a
// key's lock (in-process or flock) (a reader behind the writer the test
// holds), or once done is closed (the reader finished without waiting).
func releaseWhenWaiting(done, release chan struct{}) {
	releaseWhenWaitingIn("", done, release)
}

// releaseWhenWaitingIn is releaseWhenWaiting for a waiter whose stack
// also runs through the function named in ("" for any): in a whole
// package's run, a goroutine an earlier test left waiting for a lock
// would otherwise release the test before its own waiter got there.
func releaseWhenWaitingIn(in string, done, release chan struct{}) {
	defer close(release)
	buf := make([]byte, 1<<20)
	for {
		select {
		case <-done:
			return
		default:
		}
		for _, g := range bytes.Split(buf[:runtime.Stack(buf, true)], []byte("\n\n")) {
			waiting := bytes.Contains(g, []byte("sessdb/db.lockKey")) || bytes.Contains(g, []byte("sessdb/db.flockUntil"))
			if waiting && bytes.Contains(g, []byte(in)) {
				return
			}
		}
		time.Sleep(time.Millisecond)
	}
}

// A meta.db being created (its first writer's temp, made without any
// lock, since it is how the lock's file comes to exist, and flocked by
// its creator until linked into place) is a writer's work in flight:
// check without --repair must not report it as a stray temp, as
// --repair leaves it. The same file with no flock held is a creation's
// debris, and is reported.
func TestCheckLeavesAMetaDBBeingCreated(t *testing.T) {
	s, root, clock := newTestStore(t, gates.Bounds{})
	writeLegacy(t, root, testKey, map[string]string{TranscriptName: string(transcriptBytes(clock.now, "legacy turn")), "pi-version": testPi})
	tmp := filepath.Join(root, testKey, db.TempPrefix+"0123456789abcdef")
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	strays := func() (n int) {
		for _, f := range checkFindings(t, s, CheckOptions{}) {
			if f.Kind == KindStrayTemp {
				n++
			}
		}
		return n
	}
	if n := strays(); n != 0 {
		t.Errorf("check during a meta.db's creation found %d stray temps; want the creation left unreported", n)
	}
	unix.Flock(int(f.Fd()), unix.LOCK_UN)
	if n := strays(); n != 1 {
		t.Errorf("check found %d stray temps for an abandoned meta.db temp; want 1", n)
	}
}

// check run while a reap removes a key (its dir renamed to the reap's own
// name, its entries being removed under its lock) must not report that
// dir as a reap that was interrupted: the reap is at work, and a check
// that found the dir gone once it had the lock has nothing to report, as
// for a key removed since the listing. Exit 3 would send an operator
// after damage that is not there. Found by RunModel's concurrent groups
// (a reap and a check beside jobs).
func TestCheckDuringAReapReportsNoInterruptedReap(t *testing.T) {
	s, _, clock := newTestStore(t, gates.Bounds{TTL: opsTTL})
	expiredKey(t, s, clock, testKey)
	checked, release := make(chan struct{}), make(chan struct{})
	found := make(chan []Finding, 1)
	var once sync.Once
	faults.Set(func(p faults.Point) error {
		if p == faults.ReapAfterTranscript {
			once.Do(func() {
				go func() { found <- checkFindings(t, s, CheckOptions{}); close(checked) }()
				go releaseWhenWaitingIn("(*Store).examineOwned", checked, release)
				<-release // the check waits for the lock the reap holds
			})
		}
		return nil
	})
	t.Cleanup(func() { faults.Set(nil) })
	res, err := s.Reap(false)
	if err != nil || len(res.Removed) != 1 {
		t.Fatalf("reap: %+v, %v", res, err)
	}
	for _, f := range <-found {
		if f.Severity == SeverityProblem {
			t.Errorf("check during a reap found %s %s: %s", f.Kind, f.Path, f.Detail)
		}
	}
}
