package store

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"sessdb/db"
	"sessdb/gates"
)

// waitInStack waits until some goroutine sleeps in a frame named fn: a
// lock's poll, between its tries.
func waitInStack(t *testing.T, fn string) {
	t.Helper()
	buf := make([]byte, 1<<20)
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		s := buf[:runtime.Stack(buf, true)]
		if i := bytes.Index(s, []byte("time.Sleep")); i >= 0 && bytes.Contains(s[i:], []byte(fn)) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("nothing ever waited in %s", fn)
		}
	}
}

// A quarantine waiting for the readers of a key to leave holds back new
// readers, as a promotion does (db's turnstile, the key dir's flock):
// it takes meta.db's flock itself, and polled it past the turnstile, so
// resolves in other processes whose shared flocks overlap locked it out
// until its lock timeout. A reader of another process (its own open file
// description of meta.db, flocked shared) holds the key; the quarantine
// waits for it; a new reader must then wait too.
func TestQuarantineHoldsBackNewReadersWhileItWaits(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "one")
	meta := filepath.Join(root, testKey, db.FileName)
	held, err := os.Open(meta)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	if err := unix.Flock(int(held.Fd()), unix.LOCK_SH); err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		_, err := s.Quarantine(testKey)
		got <- err
	}()
	waitInStack(t, "flockExclusive")
	kd := openDirT(t, filepath.Join(root, testKey))
	d, err := db.OpenReader(kd, meta, db.Options{LockTimeout: 100 * time.Millisecond})
	if err == nil {
		d.Close()
		t.Error("a new reader got the key's lock while the quarantine waited for the readers before it")
	} else if !errors.Is(err, db.ErrLockTimeout) {
		t.Errorf("a new reader while the quarantine waited: %v; want a lock timeout", err)
	}
	unix.Flock(int(held.Fd()), unix.LOCK_UN)
	if err := <-got; err != nil {
		t.Errorf("quarantine once the reader left: %v", err)
	}
}
