package store

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
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
	waitInStack(t, "db.LockExclusive")
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

// waitForKeyLock waits until some goroutine waits for a key's
// in-process lock (another handle of this process holds it).
func waitForKeyLock(t *testing.T) {
	t.Helper()
	buf := make([]byte, 1<<20)
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		if bytes.Contains(buf[:runtime.Stack(buf, true)], []byte("sessdb/db.lockKey")) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("nothing ever waited for the key's lock")
		}
	}
}

// TestRollForwardWaitingOnAQuarantineLeavesIt: a roll forward (sessdb
// migrate's before a rollback, a move into or out of a fleet, check
// --repair's) that waited for the key's lock while check --repair
// --quarantine moved the dir aside must not settle the promotion in the
// dir moved aside: the quarantine promises that nothing in it changes.
// The quarantine's steps are done by hand, so that the roll forward is
// known to wait.
func TestRollForwardWaitingOnAQuarantineLeavesIt(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	key := chkKey(t, s, "rolled")
	pendingDamage(t, s, root, key)
	kd := openDirT(t, filepath.Join(root, key))
	lock, err := db.OpenWriter(kd, chkDB(root, key), db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		_, err := s.RollForward(key)
		got <- err
	}()
	waitForKeyLock(t)
	aside := filepath.Join(root, QuarantinePrefix+key+"-20261101T120000Z")
	if err := os.Rename(filepath.Join(root, key), aside); err != nil {
		t.Fatal(err)
	}
	before := entriesOf(t, aside)
	lock.Close()
	if err := <-got; err == nil {
		t.Error("the roll forward of a key moved aside while it waited succeeded")
	}
	if after := entriesOf(t, aside); after != before {
		t.Errorf("the quarantine dir changed:\n%s\nwas\n%s", after, before)
	}
}

// entriesOf is every name in dir with its size, mtime and a digest of
// its bytes.
func entriesOf(t *testing.T, dir string) string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, e := range ents {
		info, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		c, _ := os.ReadFile(filepath.Join(dir, e.Name()))
		fmt.Fprintf(&b, "%s %d %s %x\n", e.Name(), info.Size(), info.ModTime(), sha256.Sum256(c))
	}
	return b.String()
}

// TestRepairOfTempsWaitingOnAQuarantineLeavesIt: the same for check
// --repair's removal of stray temps, which removed them from the dir
// moved aside.
func TestRepairOfTempsWaitingOnAQuarantineLeavesIt(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "one")
	if err := os.WriteFile(filepath.Join(root, testKey, tmpPrefix+"0123456789abcdef"), []byte("debris"), 0o600); err != nil {
		t.Fatal(err)
	}
	lockKd := openDirT(t, filepath.Join(root, testKey))
	lock, err := db.OpenWriter(lockKd, chkDB(root, testKey), db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	kd := openDirT(t, filepath.Join(root, testKey))
	got := make(chan error, 1)
	go func() {
		_, err := s.removeTemps(kd, testKey)
		got <- err
	}()
	waitForKeyLock(t)
	aside := filepath.Join(root, QuarantinePrefix+testKey+"-20261101T120000Z")
	if err := os.Rename(filepath.Join(root, testKey), aside); err != nil {
		t.Fatal(err)
	}
	before := entriesOf(t, aside)
	lock.Close()
	if err := <-got; err == nil {
		t.Error("the removal of temps of a key moved aside while it waited succeeded")
	}
	if after := entriesOf(t, aside); after != before {
		t.Errorf("the quarantine dir changed:\n%s\nwas\n%s", after, before)
	}
}

// TestMoveAsideWaitingOnAQuarantineLeavesIt: the same for check
// --repair's move aside of a damaged meta.db, which takes meta.db's flock
// itself.
func TestMoveAsideWaitingOnAQuarantineLeavesIt(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "one")
	var examined unix.Stat_t
	if err := unix.Lstat(chkDB(root, testKey), &examined); err != nil {
		t.Fatal(err)
	}
	held, err := os.Open(chkDB(root, testKey))
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	if err := unix.Flock(int(held.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	rd := openDirT(t, root)
	got := make(chan error, 1)
	go func() {
		_, err := s.moveAside(rd, testKey, &examined)
		got <- err
	}()
	waitInStack(t, "db.LockExclusive")
	aside := filepath.Join(root, QuarantinePrefix+testKey+"-20261101T120000Z")
	if err := os.Rename(filepath.Join(root, testKey), aside); err != nil {
		t.Fatal(err)
	}
	before := entriesOf(t, aside)
	unix.Flock(int(held.Fd()), unix.LOCK_UN)
	if err := <-got; err == nil {
		t.Error("the move aside of the meta.db of a key moved aside while it waited succeeded")
	}
	if after := entriesOf(t, aside); after != before {
		t.Errorf("the quarantine dir changed:\n%s\nwas\n%s", after, before)
	}
}

// TestSweepWaitingOnAQuarantineLeavesIt: the same for reap's sweep of
// stale temps, which found nothing to sweep in the key moved aside.
func TestSweepWaitingOnAQuarantineLeavesIt(t *testing.T) {
	s, root, clock := newTestStore(t, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "one")
	stale := filepath.Join(root, testKey, tmpPrefix+"0123456789abcdef")
	if err := os.WriteFile(stale, []byte("debris"), 0o600); err != nil {
		t.Fatal(err)
	}
	old := clock.now.Add(-2 * StaleTempAge)
	if err := os.Chtimes(stale, old, old); err != nil {
		t.Fatal(err)
	}
	lockKd := openDirT(t, filepath.Join(root, testKey))
	lock, err := db.OpenWriter(lockKd, chkDB(root, testKey), db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	kd := openDirT(t, filepath.Join(root, testKey))
	type swept struct {
		names []string
		err   error
	}
	got := make(chan swept, 1)
	go func() {
		names, err := s.sweepStaleTemps(kd, testKey, clock.now.Add(-StaleTempAge), false)
		got <- swept{names, err}
	}()
	waitForKeyLock(t)
	aside := filepath.Join(root, QuarantinePrefix+testKey+"-20261101T120000Z")
	if err := os.Rename(filepath.Join(root, testKey), aside); err != nil {
		t.Fatal(err)
	}
	before := entriesOf(t, aside)
	lock.Close()
	if r := <-got; r.err != nil || len(r.names) != 0 {
		t.Errorf("the sweep of a key moved aside while it waited: %v, %v; want nothing swept", r.names, r.err)
	}
	if after := entriesOf(t, aside); after != before {
		t.Errorf("the quarantine dir changed:\n%s\nwas\n%s", after, before)
	}
}
