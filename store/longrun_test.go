package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"

	"sessdb/gates"
	"sessdb/internal/faults"
)

// TestLongRunResources is a long-running host's day on a sessions root,
// in SESSDB_LONGRUN_OPS resolve+promote pairs over a quarter as many keys
// (skipped unless set; .ci/long runs 20,000 over 5,000 keys), then 50
// jobs failed at each of Resolve's and Promote's fault points, then 500
// promotions that time out on a key another promotion holds, then a reap
// of every key. It asserts that the process ends with the descriptors
// and goroutines it started with, and a heap, after runtime.GC, within
// 1 MiB of what it held after the first tenth of the jobs; it logs the
// figures. (The in-process lock table of package db, keyed by key dir,
// is checked empty after every db test by db's TestMain.)
func TestLongRunResources(t *testing.T) {
	n := envInt("SESSDB_LONGRUN_OPS", 0)
	if n == 0 {
		t.Skip("long run: set SESSDB_LONGRUN_OPS (bash .ci/long does)")
	}
	base := t.TempDir()
	root := filepath.Join(base, "sessions")
	clock := &testClock{now: time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)}
	opts := Options{Bounds: gates.Bounds{TTL: 24 * time.Hour}, Now: clock.Now, LockTimeout: 5 * time.Second}
	s, err := New(root, opts)
	if err != nil {
		t.Fatal(err)
	}
	opts.LockTimeout = time.Millisecond
	quick, err := New(root, opts)
	if err != nil {
		t.Fatal(err)
	}
	jobs := filepath.Join(base, "jobs")
	if err := os.Mkdir(jobs, 0o700); err != nil {
		t.Fatal(err)
	}
	keys := make([]string, max(n/4, 1))
	for i := range keys {
		keys[i] = Key("github", "acme/widget", fmt.Sprintf("pi/issue-%d", i))
	}
	job := 0
	// one is a whole job on key; a fault may fail it anywhere.
	one := func(key string) error {
		job++
		jd := filepath.Join(jobs, strconv.Itoa(job))
		defer os.RemoveAll(jd)
		sess, err := s.Resolve(key, localJob(), jd)
		if err != nil {
			return err
		}
		data := staged(t, jd)
		if len(data) == 0 {
			data = transcriptBytes(clock.now)
		}
		stage(t, jd, append(data, entryLine("x")...))
		_, err = s.Promote(sess, PromoteRequest{PiVersion: testPi})
		return err
	}
	fds0, g0 := openFDs(t), runtime.NumGoroutine()
	var warm uint64
	start := time.Now()
	for i := range n {
		if err := one(keys[i%len(keys)]); err != nil {
			t.Fatal(err)
		}
		if i == n/10 {
			warm = heapAfterGC()
		}
	}
	t.Logf("%d jobs over %d keys in %v: heap %d KiB (%d KiB after the first tenth), %d goroutines (%d before), %d descriptors (%d before)",
		n, len(keys), time.Since(start).Round(time.Second), heapAfterGC()>>10, warm>>10, runtime.NumGoroutine(), g0, openFDs(t), fds0)

	boom := errors.New("injected")
	for _, p := range []faults.Point{faults.ResolveAfterKeyDirOpen, faults.ResolveAfterMetaOpen, faults.ResolveAfterGates,
		faults.ResolveAfterCopy, faults.TranscriptHeaderRead, faults.DBOpenBeforeMeta, faults.DBOpenBeforeLock,
		faults.PromoteAfterTempWrite, faults.PromoteAfterTempSync, faults.PromoteAfterCommit, faults.PromoteAfterRename,
		faults.PromoteAfterDirSync, faults.RollForwardTempRead, faults.PendingAfterLook, faults.PendingTempCheck} {
		faults.Set(func(q faults.Point) error {
			if q == p {
				return boom
			}
			return nil
		})
		for i := range 50 {
			one(keys[i%len(keys)])
		}
		faults.Set(nil)
	}

	// A promotion held inside its lock while 500 others time out on it.
	key := keys[0]
	var waiting []Session
	for range 500 {
		jd := filepath.Join(jobs, "w"+strconv.Itoa(len(waiting)))
		sess, err := s.Resolve(key, localJob(), jd)
		if err != nil {
			t.Fatal(err)
		}
		stage(t, jd, append(staged(t, jd), entryLine("y")...))
		waiting = append(waiting, sess)
	}
	held, release := make(chan struct{}), make(chan struct{})
	faults.Set(func(q faults.Point) error {
		if q == faults.PromoteAfterTempSync {
			faults.Set(nil)
			close(held)
			<-release
		}
		return nil
	})
	done := make(chan error, 1)
	go func() { _, err := s.Promote(waiting[0], PromoteRequest{PiVersion: testPi}); done <- err }()
	<-held
	for _, sess := range waiting[1:] {
		if res, err := quick.Promote(sess, PromoteRequest{PiVersion: testPi}); err != nil || res.Reason != gates.Locked {
			t.Fatalf("promote under a held lock = %s, %v; want %s", res.Reason, err, gates.Locked)
		}
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	os.RemoveAll(jobs)

	clock.now = clock.now.Add(48 * time.Hour)
	res, err := s.Reap(false)
	if err != nil || len(res.Removed) != len(keys) {
		t.Fatalf("reap removed %d of %d keys: %v (%v)", len(res.Removed), len(keys), err, res.Skipped)
	}
	heap, fds, g := heapAfterGC(), openFDs(t), runtime.NumGoroutine()
	t.Logf("after the faults, the timeouts and the reap: heap %d KiB, %d goroutines, %d descriptors", heap>>10, g, fds)
	if fds != fds0 || g != g0 {
		t.Errorf("%d descriptors and %d goroutines left, %d and %d at the start", fds, g, fds0, g0)
	}
	if heap > warm+1<<20 {
		t.Errorf("heap %d KiB, %d KiB after the first tenth of the jobs: more than 1 MiB kept", heap>>10, warm>>10)
	}
}

func heapAfterGC() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// openFDs counts the process's open descriptors (Linux: /proc/self/fd).
func openFDs(t *testing.T) int {
	es, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("descriptors not countable here: %v", err)
	}
	return len(es)
}
