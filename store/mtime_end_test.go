package store

import (
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"sessdb/gates"
	"sessdb/internal/testfs"
)

// A file system that keeps any mtime it is given (tmpfs: utimensat of
// 2^63-1 s reads back so) can date a legacy key's transcript at the end of
// time: a clock that is off, in the future, so the key is not expired. But
// time.Unix wraps a second count that near 2^63 to the far past: the
// resolve said expired and reap removed the key. Now the time is held at
// the last second time.Unix does not wrap, still the future: the key
// resumes and reap keeps it. Run on /dev/shm, the tmpfs Linux mounts;
// ext4 (the test's usual temp dir) clamps the mtime to 2446, which no
// wrap reaches.
func TestALegacyKeyDatedAtTheEndOf64BitsIsNotExpired(t *testing.T) {
	root := filepath.Join(testfs.TmpfsDir(t), "sessions")
	clock := &testClock{now: time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)}
	s, err := New(root, Options{Bounds: gates.Bounds{TTL: opsTTL}, Now: clock.Now, LockTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	writeLegacy(t, root, testKey, map[string]string{TranscriptName: string(transcriptBytes(clock.now)), "venue": "local", "pi-version": testPi})
	p := filepath.Join(root, testKey, TranscriptName)
	testfs.Date(t, p, math.MaxInt64)
	sess, _ := mustResolve(t, s, testKey, localJob())
	if !sess.Resume {
		t.Errorf("resolve of a legacy key dated at the end of time: %s; want resumed (a future is not expired)", sess.Reason)
	}
	res, err := s.Reap(false)
	if err != nil || len(res.Removed) != 0 {
		t.Fatalf("reap: %+v, %v; want the key kept", res, err)
	}
	if _, err := os.Lstat(p); err != nil {
		t.Fatalf("the key's transcript after reap: %v", err)
	}
}
