package db

import (
	"context"
	"errors"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// doneNoErr is a Context of a caller's own whose Done is closed while its
// Err stays nil: against Go's contract.
type doneNoErr struct {
	context.Context
	done chan struct{}
}

func (c doneNoErr) Done() <-chan struct{} { return c.done }
func (doneNoErr) Err() error              { return nil }

// errPanics is a Context whose Err is nil until its Done is closed, and
// panics from then on.
type errPanics struct {
	context.Context
	done chan struct{}
}

func (c errPanics) Done() <-chan struct{} { return c.done }
func (c errPanics) Err() error {
	select {
	case <-c.done:
		panic("the caller's Err")
	default:
		return nil
	}
}

// openBroken opens kd (a writer's open when write), whose lock another
// holds, with ctx, under a LockTimeout far longer than the test waits, and
// wants the open to give up with context.Canceled well before it, never
// panicking.
func openBroken(t *testing.T, what string, ctx context.Context, kd keyDir, write bool) {
	t.Helper()
	const timeout = 5 * time.Second
	open := OpenReaderContext
	if write {
		open = OpenWriterContext
	}
	start := time.Now()
	var d *DB
	var err error
	func() {
		defer func() {
			if r := recover(); r != nil {
				t.Fatalf("%s, write=%v: the open panicked: %v", what, write, r)
			}
		}()
		d, err = open(ctx, kd.dir, kd.db, Options{LockTimeout: timeout})
	}()
	elapsed := time.Since(start)
	if err == nil {
		d.Close()
		t.Fatalf("%s, write=%v: opened a db whose lock is held", what, write)
	}
	if !errors.Is(err, context.Canceled) || errors.Is(err, ErrLockTimeout) {
		t.Fatalf("%s, write=%v: got %v, want context.Canceled and not ErrLockTimeout", what, write, err)
	}
	if elapsed >= timeout/2 {
		t.Errorf("%s, write=%v: gave up after %v, LockTimeout %v: the wait went on", what, write, elapsed, timeout)
	}
}

// A context of the caller's own that breaks Go's contract ends the wait
// for the in-process lock and for the file lock as a cancel: a Done
// closed with a nil Err (before, the wait spun until LockTimeout), an Err
// that panics while the open waits (before, the panic left the lock
// table's mutex held, and a waiting writer counted, for every later open
// of a caller that recovers it).
func TestOpenContextThatBreaksTheContract(t *testing.T) {
	kd := makeDB(t, 0)
	other := openKeyDir(t, kd.path)
	closedLater := func() context.Context {
		c := doneNoErr{context.Background(), make(chan struct{})}
		time.AfterFunc(50*time.Millisecond, func() { close(c.done) })
		return c
	}
	panicsLater := func() context.Context {
		c := errPanics{context.Background(), make(chan struct{})}
		time.AfterFunc(50*time.Millisecond, func() { close(c.done) })
		return c
	}
	w := mustOpen(t, kd, true)
	for _, write := range []bool{false, true} {
		openBroken(t, "in-process, Done closed with a nil Err", closedLater(), other, write)
		openBroken(t, "in-process, Err panics", panicsLater(), other, write)
	}
	w.Close()
	// Nothing was left held: an open now has the lock at once.
	d, err := OpenWriterContext(context.Background(), other.dir, other.db, Options{LockTimeout: time.Nanosecond})
	if err != nil {
		t.Fatalf("open after the waits given up: %v", err)
	}
	d.Close()
	if n := keyLockCount(); n != 0 {
		t.Errorf("%d in-process locks left in the table", n)
	}

	fd, err := unix.Open(kd.db, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if err := unix.Flock(fd, unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	for _, write := range []bool{false, true} {
		openBroken(t, "file lock, Done closed with a nil Err", closedLater(), kd, write)
		openBroken(t, "file lock, Err panics", panicsLater(), kd, write)
	}
	if err := unix.Flock(fd, unix.LOCK_UN); err != nil {
		t.Fatal(err)
	}
	d, err = openSidecarsForTest(kd)
	if err != nil {
		t.Fatalf("open after the waits given up: %v", err)
	}
	d.Close()
}
