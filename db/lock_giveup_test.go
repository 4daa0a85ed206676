package db

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// writersWaiting is how many writers wait in the in-process lock table.
func writersWaiting() int {
	keyLocks.Lock()
	defer keyLocks.Unlock()
	n := 0
	for _, l := range keyLocks.m {
		n += l.writersWaiting
	}
	return n
}

// A writer that gives up waiting stops holding back readers at once: the
// readers it held back get the shared lock then, not at their own deadline,
// and later ones get it without waiting. Each timeout names the lock it
// waited for.
func TestAWriterThatGaveUpHoldsBackNoReader(t *testing.T) {
	kd := makeDB(t, 0)
	mustOpen(t, kd, false) // held to the test's end

	wrote := make(chan error, 1)
	go func() {
		w, err := OpenWriter(kd.dir, kd.db, Options{LockTimeout: 300 * time.Millisecond})
		if err == nil {
			w.Close()
		}
		wrote <- err
	}()
	for deadline := time.Now().Add(5 * time.Second); writersWaiting() != 1; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the writer never started waiting")
		}
	}
	read := make(chan error, 1)
	go func() {
		r, err := OpenReader(kd.dir, kd.db, Options{LockTimeout: 20 * time.Second})
		if err == nil {
			r.Close()
		}
		read <- err
	}()
	err := <-wrote
	if !errors.Is(err, ErrLockTimeout) || !strings.Contains(err.Error(), "exclusive in-process lock") {
		t.Fatalf("the writer under a reader: %v, want ErrLockTimeout naming the exclusive in-process lock", err)
	}
	gaveUp := time.Now()
	select {
	case err := <-read:
		if err != nil {
			t.Fatalf("the reader held back by the writer, once it gave up: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the reader held back by a writer that gave up still waits 10s later (its deadline is 20s)")
	}
	if took := time.Since(gaveUp); took > 5*time.Second {
		t.Errorf("the reader held back got the lock %v after the writer gave up", took)
	}
	if n := writersWaiting(); n != 0 {
		t.Errorf("%d writers waiting after the only one gave up", n)
	}
	r, err := OpenReader(kd.dir, kd.db, Options{LockTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatalf("a reader after the writer gave up: %v", err)
	}
	r.Close()
}

// A reader's timeout under a writer names the shared lock it waited for.
func TestAReadersTimeoutNamesTheSharedLock(t *testing.T) {
	kd := makeDB(t, 0)
	w := mustOpen(t, kd, true)
	expectTimeout(t, kd, false, 100*time.Millisecond, "shared in-process lock")
	w.Close()
}

// A LockTimeout of 0 is DefaultLockTimeout, as Options says, not no wait
// at all: a writer asking for 0 waits for a reader that leaves.
func TestALockTimeoutOfZeroWaits(t *testing.T) {
	kd := makeDB(t, 0)
	r, err := OpenReader(kd.dir, kd.db, testOpts)
	if err != nil {
		t.Fatal(err)
	}
	wrote := make(chan error, 1)
	go func() {
		w, err := OpenWriter(kd.dir, kd.db, Options{})
		if err == nil {
			w.Close()
		}
		wrote <- err
	}()
	for writersWaiting() != 1 {
		select {
		case err := <-wrote:
			r.Close()
			t.Fatalf("a writer with LockTimeout 0 under a reader returned at once: %v", err)
		case <-time.After(time.Millisecond):
		}
	}
	r.Close()
	if err := <-wrote; err != nil {
		t.Errorf("a writer with LockTimeout 0, once the reader left: %v", err)
	}
}
