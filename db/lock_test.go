package db

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// expectTimeout opens with the given timeout and wants ErrLockTimeout after
// roughly that long: not early (the wait is real) and not much later (the
// bound holds).
func expectTimeout(t *testing.T, kd keyDir, write bool, timeout time.Duration, detail string) {
	t.Helper()
	open := OpenReader
	if write {
		open = OpenWriter
	}
	start := time.Now()
	d, err := open(kd.dir, kd.db, Options{LockTimeout: timeout})
	elapsed := time.Since(start)
	if err == nil {
		d.Close()
	}
	if !errors.Is(err, ErrLockTimeout) || !strings.Contains(err.Error(), detail) {
		t.Fatalf("write=%v: got %v, want ErrLockTimeout (%s)", write, err, detail)
	}
	// The upper bound is the floor of an open that ignores LockTimeout for
	// the default (every caller's timeout is far below it): all the room
	// below it is a loaded machine's.
	if timeout >= DefaultLockTimeout/2 {
		t.Fatalf("a timeout of %v is too near the default %v to tell them apart", timeout, DefaultLockTimeout)
	}
	if elapsed < timeout || elapsed >= DefaultLockTimeout {
		t.Errorf("write=%v: timed out after %v, want about %v", write, elapsed, timeout)
	}
}

func TestReadersShare(t *testing.T) {
	kd := makeDB(t, 0)
	other := openKeyDir(t, kd.path) // another descriptor of the same directory
	r1 := mustOpen(t, kd, false)
	// No wait at all: both locks are tried once before their deadline is
	// looked at, so a reader held back even for a moment times out. (A
	// bound on the open's wall time, 100 ms, was at a loaded machine's
	// mercy.)
	r2, err := OpenReader(other.dir, other.db, Options{LockTimeout: time.Nanosecond})
	if err != nil {
		t.Fatalf("second reader: %v", err)
	}
	defer r2.Close()
	_ = r1
}

func TestWriterExcludes(t *testing.T) {
	kd := makeDB(t, 0)
	other := openKeyDir(t, kd.path)
	w := mustOpen(t, kd, true)
	expectTimeout(t, other, false, 150*time.Millisecond, "in-process")
	expectTimeout(t, other, true, 150*time.Millisecond, "in-process")
	w.Close()
	r := mustOpen(t, other, false)
	expectTimeout(t, kd, true, 150*time.Millisecond, "in-process")
	r.Close()
}

// A waiting writer holds back new readers, so that resolves cannot starve a
// promotion; when the readers leave, the writer gets in.
func TestWaitingWriterHoldsBackReaders(t *testing.T) {
	kd := makeDB(t, 0)
	r := mustOpen(t, kd, false)
	got := make(chan error, 1)
	go func() {
		w, err := OpenWriter(kd.dir, kd.db, Options{LockTimeout: 5 * time.Second})
		if err == nil {
			err = w.Close()
		}
		got <- err
	}()
	for deadline := time.Now().Add(2 * time.Second); ; {
		keyLocks.Lock()
		waiting := 0
		for _, l := range keyLocks.m {
			waiting += l.writersWaiting
		}
		keyLocks.Unlock()
		if waiting == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the writer never started waiting")
		}
		time.Sleep(time.Millisecond)
	}
	expectTimeout(t, kd, false, 100*time.Millisecond, "in-process")
	r.Close()
	if err := <-got; err != nil {
		t.Errorf("writer after the reader left: %v", err)
	}
}

// Many goroutines open, use and close handles on a few keys. Writers do a
// read-modify-write of one counter each through their own handle, so a lost
// update means two writers overlapped. The lock table drains afterwards.
func TestConcurrentHandles(t *testing.T) {
	keys := []keyDir{makeDB(t, 0), makeDB(t, 0), makeDB(t, 0)}
	const goroutines, rounds = 12, 25
	var wg sync.WaitGroup
	var mu sync.Mutex
	writes := map[string]uint64{}
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 7))
			for range rounds {
				kd := keys[rng.IntN(len(keys))]
				opts := Options{LockTimeout: 20 * time.Second}
				if rng.IntN(3) == 0 {
					d, err := OpenWriter(kd.dir, kd.db, opts)
					if err != nil {
						t.Error(err)
						return
					}
					err = d.Update(func(tx *Tx) error {
						s, err := tx.Sidecars()
						if err != nil {
							return err
						}
						n := uint64(0)
						if s.ResumeChain != nil {
							n = *s.ResumeChain
						}
						return tx.PutResumeChain(n + 1)
					})
					d.Close()
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					writes[kd.path]++
					mu.Unlock()
				} else {
					d, err := OpenReader(kd.dir, kd.db, opts)
					if err != nil {
						t.Error(err)
						return
					}
					d.View(func(tx *Tx) error { _, err := tx.Sidecars(); return err })
					d.Close()
				}
			}
		}()
	}
	wg.Wait()
	for _, kd := range keys {
		d := mustOpen(t, kd, false)
		var s Sidecars
		d.View(func(tx *Tx) (err error) { s, err = tx.Sidecars(); return err })
		d.Close()
		// populate left the chain at 3 for makeDB's files.
		if want := writes[kd.path] + 3; s.ResumeChain == nil || *s.ResumeChain != want {
			t.Errorf("%s: chain %v after %d increments, want %d", kd.path, s.ResumeChain, writes[kd.path], want)
		}
	}
	if n := keyLockCount(); n != 0 {
		t.Errorf("lock table holds %d entries after every handle closed", n)
	}
}

const holderDirEnv = "SESSDB_DB_TEST_DIR"

// holdInChild starts a child process that opens the key dir at path as a
// reader or writer, says "held", and keeps the handle until its stdin
// closes. It returns a function that ends the child: gently, or by SIGKILL.
func holdInChild(t *testing.T, path string, write bool) (end func(kill bool)) {
	t.Helper()
	var stdin io.WriteCloser
	var stdout io.ReadCloser
	cmd := &exec.Cmd{}
	_, err := runChild(t, []string{holderDirEnv + "=" + path, fmt.Sprintf("SESSDB_DB_TEST_WRITE=%v", write)}, func(c *exec.Cmd) {
		cmd = c
		stdin, _ = c.StdinPipe()
		stdout, _ = c.StdoutPipe()
		c.Stderr = os.Stderr
	})
	if err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(stdout)
	var line string
	for !strings.HasPrefix(line, "held") && err == nil { // -test.v prints "=== RUN" first
		line, err = r.ReadString('\n')
	}
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("child did not take the lock: %v", err)
	}
	go io.Copy(io.Discard, r) // keep the child from blocking on a full pipe
	var once sync.Once
	end = func(kill bool) {
		once.Do(func() {
			if kill {
				cmd.Process.Kill()
				cmd.Wait()
				return
			}
			stdin.Close()
			if err := cmd.Wait(); err != nil {
				t.Errorf("lock holder: %v", err)
			}
		})
	}
	t.Cleanup(func() { end(false) })
	return end
}

// runHolder is the child's side of holdInChild.
func runHolder(t *testing.T) bool {
	path := os.Getenv(holderDirEnv)
	if os.Getenv(childEnv) != t.Name() || path == "" {
		return false
	}
	kd := openKeyDir(t, path)
	d := mustOpen(t, kd, os.Getenv("SESSDB_DB_TEST_WRITE") == "true")
	fmt.Println("held")
	io.Copy(io.Discard, os.Stdin)
	d.Close()
	return true
}

func TestTwoProcesses(t *testing.T) {
	t.Run("writer", func(t *testing.T) {
		if runHolder(t) {
			return
		}
		kd := makeDB(t, 0)
		end := holdInChild(t, kd.path, true)
		expectTimeout(t, kd, false, 200*time.Millisecond, "file lock")
		expectTimeout(t, kd, true, 200*time.Millisecond, "file lock")
		end(false)
		mustOpen(t, kd, true).Close()
	})
	t.Run("reader", func(t *testing.T) {
		if runHolder(t) {
			return
		}
		kd := makeDB(t, 0)
		end := holdInChild(t, kd.path, false)
		mustOpen(t, kd, false).Close()
		expectTimeout(t, kd, true, 200*time.Millisecond, "file lock")
		end(false)
		mustOpen(t, kd, true).Close()
	})
	// The kernel releases flock when its holder dies: no stale lock.
	t.Run("killed", func(t *testing.T) {
		if runHolder(t) {
			return
		}
		kd := makeDB(t, 0)
		end := holdInChild(t, kd.path, true)
		expectTimeout(t, kd, true, 100*time.Millisecond, "file lock")
		end(true)
		mustOpen(t, kd, true).Close()
	})
	// The in-process wait and the file lock wait share one deadline: an
	// open whose in-process wait ends at u, short of its timeout T, gives
	// up on the file lock at T, not at u+T.
	t.Run("one_deadline", func(t *testing.T) {
		if runHolder(t) {
			return
		}
		kd := makeDB(t, 0)
		holdInChild(t, kd.path, true)
		id := dirID(t, kd)
		// A timer that fires near or past T (a loaded machine) tells
		// nothing apart; such a round is run again with a longer timeout.
		for timeout := 400 * time.Millisecond; ; timeout *= 2 {
			unlock, err := lockKey(context.Background(), id, false, time.Now().Add(time.Second))
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			released := make(chan time.Duration, 1)
			time.AfterFunc(timeout*3/4, func() {
				released <- time.Since(start)
				unlock()
			})
			d, err := OpenWriter(kd.dir, kd.db, Options{LockTimeout: timeout})
			elapsed := time.Since(start)
			if err == nil {
				d.Close()
			}
			u := <-released
			if u > timeout*7/8 && timeout < 8*time.Second {
				continue
			}
			if !errors.Is(err, ErrLockTimeout) || !strings.Contains(err.Error(), "file lock") {
				t.Fatalf("got %v, want ErrLockTimeout (file lock)", err)
			}
			// Two deadlines would end the wait at u+T or later.
			if elapsed < timeout || elapsed >= u+timeout {
				t.Fatalf("in-process lock released at %v, timeout %v: gave up after %v, want about %v", u, timeout, elapsed, timeout)
			}
			return
		}
	})
}

func dirID(t *testing.T, kd keyDir) keyID {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Fstat(int(kd.dir.Fd()), &st); err != nil {
		t.Fatal(err)
	}
	return keyID{uint64(st.Dev), st.Ino}
}

// The lock must cover the file the name refers to: a file replaced between
// the open and the lock is opened again, up to openAttempts in all.
func TestReplacedWhileLocking(t *testing.T) {
	kd := makeDB(t, 0)
	rival := makeDB(t, 0)
	replace := func() {
		if err := os.Rename(rival.db, kd.db); err != nil && !os.IsNotExist(err) {
			t.Error(err)
		}
	}
	calls := 0
	testHookLocked = func() {
		if calls++; calls == 1 {
			replace()
		}
	}
	defer func() { testHookLocked = nil }()
	d := mustOpen(t, kd, false)
	if calls != 2 {
		t.Errorf("locked %d times, want 2 (the replaced file, then the new one)", calls)
	}
	d.Close()

	// Replaced every time: give up instead of looping.
	others := []keyDir{makeDB(t, 0), makeDB(t, 0), makeDB(t, 0), makeDB(t, 0)}
	n := 0
	testHookLocked = func() {
		if n < len(others) {
			if err := os.Rename(others[n].db, kd.db); err != nil {
				t.Error(err)
			}
		}
		n++
	}
	_, err := OpenReader(kd.dir, kd.db, testOpts)
	wantErr(t, err, ErrLockTimeout)
	wantErr(t, err, errReplaced)
	if n != openAttempts {
		t.Errorf("tried %d times, want %d", n, openAttempts)
	}
}
