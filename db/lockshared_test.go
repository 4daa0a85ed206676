package db

import (
	"errors"
	"os"
	"testing"
	"time"
)

// LockShared, store's wait for a key's lock that writes nothing, shares
// the flock with readers, waits for a holder of the exclusive one (and
// gives up at its timeout with a flock PathError wrapping
// ErrLockTimeout), and keeps a writer out until f is closed.
func TestLockSharedSharesWithReadersAndWaitsForAWriter(t *testing.T) {
	kd := makeDB(t, 1)
	open := func() *os.File {
		t.Helper()
		f, err := os.Open(kd.db)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}

	r := mustOpenNoCheck(t, kd)
	f := open()
	if err := LockShared(kd.dir, f, 100*time.Millisecond); err != nil {
		t.Fatalf("LockShared beside a reader: %v", err)
	}
	f.Close()
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}

	w := open()
	if err := LockExclusive(kd.dir, w, 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	f = open()
	err := LockShared(kd.dir, f, 100*time.Millisecond)
	var pe *os.PathError
	if !errors.Is(err, ErrLockTimeout) || !errors.As(err, &pe) || pe.Op != "flock" || pe.Path != kd.db {
		t.Fatalf("LockShared under a writer: %v, want a flock PathError of %s wrapping ErrLockTimeout", err, kd.db)
	}
	f.Close()
	w.Close()

	f = open()
	if err := LockShared(kd.dir, f, 100*time.Millisecond); err != nil {
		t.Fatalf("LockShared once the writer let go: %v", err)
	}
	w = open()
	if err := LockExclusive(kd.dir, w, 100*time.Millisecond); !errors.Is(err, ErrLockTimeout) {
		t.Fatalf("a writer's lock under LockShared: %v, want ErrLockTimeout", err)
	}
	w.Close()
	f.Close()
	w = open()
	defer w.Close()
	if err := LockExclusive(kd.dir, w, 100*time.Millisecond); err != nil {
		t.Fatalf("a writer's lock once the shared one is closed: %v", err)
	}
}
