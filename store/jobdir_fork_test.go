package store

import (
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"

	"sessdb/gates"
	"sessdb/internal/faults"
	"sessdb/internal/testfs"
)

// dupOpenDir duplicates the process's descriptor of the directory path,
// as a child forked at that moment holds a copy of it until it execs; the
// copy is closed when the test ends.
func dupOpenDir(t *testing.T, path string) {
	t.Helper()
	fd, ok, err := testfs.DupDescriptorOf(path)
	if !ok {
		t.Skip("no /proc/self/fd to find the staged dir's descriptor in")
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
}

// A child a Go worker forks while a resolve or a promote holds the job
// dir's lock (a job's container started while another job resolves)
// holds a copy of the staged dir's descriptor until it execs, and a flock
// belongs to the open file description the copy shares. Released by
// closing its descriptor alone, the lock stayed held through the copy:
// the job's next promote, or the next resolve into the dir, was
// ErrJobDirBusy, promote-failed for a run that was whole. The copy here
// is a dup made at a fault point inside each and kept open after it.
func TestAChildForkedWhileTheJobDirIsLockedDoesNotKeepItBusy(t *testing.T) {
	s, _, _ := newTestStore(t, gates.Bounds{})
	jobDir := t.TempDir()
	staging := filepath.Join(jobDir, StagedDirName)

	fired := insideAt(t, faults.StagedAfterUnlink, func() error { dupOpenDir(t, staging); return nil })
	sess, err := s.Resolve(testKey, localJob(), jobDir)
	faults.Set(nil)
	if err != nil || !*fired {
		t.Fatalf("resolve: %v (the fault point reached: %v)", err, *fired)
	}
	stage(t, jobDir, transcriptBytes(testClockStart, "the run"))
	fired = insideAt(t, faults.PromoteAfterTempWrite, func() error { dupOpenDir(t, staging); return nil })
	res, err := s.Promote(sess, PromoteRequest{PiVersion: testPi})
	faults.Set(nil)
	if err != nil || !res.Promoted || !*fired {
		t.Fatalf("promote after a resolve whose staged dir's descriptor a child holds: %+v, %v; want promoted", res, err)
	}
	if _, err := s.Resolve(testKey, localJob(), jobDir); err != nil {
		t.Errorf("resolve after a promote whose staged dir's descriptor a child holds: %v; want resolved", err)
	}
}

// The same, with real children: a goroutine runs /bin/true over and over
// while jobs resolve and promote in one job dir.
func TestJobsBesideAForkingGoroutineAreNeverBusy(t *testing.T) {
	if _, err := exec.LookPath("true"); err != nil {
		t.Skipf("no true(1) to fork: %v", err)
	}
	s, _, _ := newTestStore(t, gates.Bounds{})
	var stop atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		for !stop.Load() {
			exec.Command("true").Run()
		}
	}()
	defer func() { stop.Store(true); <-done }()
	jobDir := t.TempDir()
	busy := 0
	const rounds = 100
	for i := range rounds {
		sess, err := s.Resolve(testKey, localJob(), jobDir)
		if errors.Is(err, ErrJobDirBusy) {
			busy++
			continue
		} else if err != nil {
			t.Fatal(err)
		}
		stage(t, jobDir, transcriptBytes(testClockStart, fmt.Sprint("round ", i)))
		if _, err := s.Promote(sess, PromoteRequest{PiVersion: testPi}); errors.Is(err, ErrJobDirBusy) {
			busy++
		} else if err != nil {
			t.Fatal(err)
		}
	}
	if busy > 0 {
		t.Errorf("%d of %d resolves and promotes were ErrJobDirBusy beside a forking goroutine; want none", busy, 2*rounds)
	}
}

// The same for a promote the staged dir refuses after its lock is taken
// (here no staged file, gates.Absent): its lock is let go as a promoted
// run's is. Closed alone, a child forked meanwhile kept the refusal's
// lock, and the job dir's next resolve was ErrJobDirBusy. Four goroutines
// fork, for the refusal's short hold to meet a child in most runs.
func TestRefusedPromotesBesideAForkingGoroutineLeaveTheJobDirFree(t *testing.T) {
	if _, err := exec.LookPath("true"); err != nil {
		t.Skipf("no true(1) to fork: %v", err)
	}
	s, _, _ := newTestStore(t, gates.Bounds{})
	var stop atomic.Bool
	var forkers sync.WaitGroup
	for range 4 {
		forkers.Go(func() {
			for !stop.Load() {
				exec.Command("true").Run()
			}
		})
	}
	defer func() { stop.Store(true); forkers.Wait() }()
	jobDir := t.TempDir()
	busy := 0
	const rounds = 500
	for range rounds {
		sess, err := s.Resolve(testKey, localJob(), jobDir)
		if errors.Is(err, ErrJobDirBusy) {
			busy++
			continue
		} else if err != nil {
			t.Fatal(err)
		}
		res, err := s.Promote(sess, PromoteRequest{PiVersion: testPi})
		if errors.Is(err, ErrJobDirBusy) {
			busy++
		} else if err != nil || res.Promoted || res.Reason != gates.Absent {
			t.Fatalf("promote of a job that staged nothing: %+v, %v; want %s", res, err, gates.Absent)
		}
	}
	if busy > 0 {
		t.Errorf("%d of %d resolves and refused promotes were ErrJobDirBusy beside forking goroutines; want none", busy, 2*rounds)
	}
}
