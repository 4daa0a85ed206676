package db

import (
	"context"
	"errors"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// openCancelled opens kd (a writer's open when write) with ctx cancelled
// after a short wait, under a LockTimeout far longer than that, and wants
// the open to give up with the cancel, not ErrLockTimeout, well before its
// LockTimeout: a caller that gave up is not kept waiting for a lock.
func openCancelled(t *testing.T, kd keyDir, write bool) {
	t.Helper()
	const timeout = 900 * time.Millisecond // under DefaultLockTimeout/2
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	time.AfterFunc(50*time.Millisecond, cancel)
	open := OpenReaderContext
	if write {
		open = OpenWriterContext
	}
	start := time.Now()
	d, err := open(ctx, kd.dir, kd.db, Options{LockTimeout: timeout})
	elapsed := time.Since(start)
	if err == nil {
		d.Close()
		t.Fatalf("write=%v: opened a db whose lock is held", write)
	}
	if !errors.Is(err, context.Canceled) || errors.Is(err, ErrLockTimeout) {
		t.Fatalf("write=%v: got %v, want context.Canceled and not ErrLockTimeout", write, err)
	}
	if elapsed >= timeout {
		t.Errorf("write=%v: gave up after %v, the whole LockTimeout %v: the cancel did not end the wait", write, elapsed, timeout)
	}
}

// A cancelled context ends the wait for the in-process lock.
func TestOpenContextEndsInProcessWait(t *testing.T) {
	kd := makeDB(t, 0)
	other := openKeyDir(t, kd.path)
	w := mustOpen(t, kd, true)
	openCancelled(t, other, false)
	openCancelled(t, other, true)
	w.Close()
	// Nothing was left held: an open now has the lock at once.
	d, err := OpenWriterContext(context.Background(), other.dir, other.db, Options{LockTimeout: time.Nanosecond})
	if err != nil {
		t.Fatalf("open after the cancelled waits: %v", err)
	}
	d.Close()
	if n := keyLockCount(); n != 0 {
		t.Errorf("%d in-process locks left in the table", n)
	}
}

// A cancelled context ends the wait for the file lock that another open
// file description (another process, as a rule) holds.
func TestOpenContextEndsFileLockWait(t *testing.T) {
	kd := makeDB(t, 0)
	fd, err := unix.Open(kd.db, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if err := unix.Flock(fd, unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	openCancelled(t, kd, false)
	openCancelled(t, kd, true)
	if err := unix.Flock(fd, unix.LOCK_UN); err != nil {
		t.Fatal(err)
	}
	d, err := openSidecarsForTest(kd)
	if err != nil {
		t.Fatalf("open after the cancelled waits: %v", err)
	}
	d.Close()
}

// openSidecarsForTest opens kd as a writer through
// OpenSidecarsContext with a context that is never done.
func openSidecarsForTest(kd keyDir) (*DB, error) {
	d, _, err := OpenSidecarsContext(context.Background(), kd.dir, Options{LockTimeout: time.Second}, true)
	return d, err
}

// A context done before the open gives up at its first wait, and an open
// that waits for nothing is had whatever ctx says: ctx is consulted only
// while the open waits.
func TestOpenContextDoneBefore(t *testing.T) {
	kd := makeDB(t, 0)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	d, err := OpenReaderContext(ctx, kd.dir, kd.db, testOpts)
	if err != nil {
		t.Fatalf("an open that waits for nothing: %v", err)
	}
	other := openKeyDir(t, kd.path)
	_, err = OpenWriterContext(ctx, other.dir, other.db, testOpts)
	d.Close()
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("a writer behind a reader, ctx done: got %v, want context.Canceled", err)
	}
}

// A nil context is context.Background(), as the store's methods take one:
// an open that waits for a lock (the in-process lock, meta.db's flock) with
// one waits until its LockTimeout, as OpenReader and OpenWriter do, and
// does not panic at its first look at the context.
func TestOpenContextNil(t *testing.T) {
	kd := makeDB(t, 0)
	other := openKeyDir(t, kd.path)
	open := func(write bool) error {
		f := OpenReaderContext
		if write {
			f = OpenWriterContext
		}
		d, err := f(nil, other.dir, other.db, Options{LockTimeout: 50 * time.Millisecond})
		if err == nil {
			d.Close()
		}
		return err
	}
	w := mustOpen(t, kd, true)
	for _, write := range []bool{false, true} {
		if err := open(write); !errors.Is(err, ErrLockTimeout) {
			t.Fatalf("write=%v, nil ctx, behind an in-process writer: %v, want ErrLockTimeout", write, err)
		}
	}
	w.Close()
	fd, err := unix.Open(kd.db, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if err := unix.Flock(fd, unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	for _, write := range []bool{false, true} {
		if err := open(write); !errors.Is(err, ErrLockTimeout) {
			t.Fatalf("write=%v, nil ctx, behind a file lock: %v, want ErrLockTimeout", write, err)
		}
	}
	unix.Flock(fd, unix.LOCK_UN)
	//lint:ignore SA1012 a nil ctx is what is tested
	d, _, err := OpenSidecarsContext(nil, other.dir, Options{LockTimeout: time.Second}, true)
	if err != nil {
		t.Fatalf("OpenSidecarsContext with a nil ctx: %v", err)
	}
	d.Close()
}

// holdFlock takes an exclusive flock of path on a descriptor of its own,
// as another process would hold it, until the test ends.
func holdFlock(t *testing.T, path string) {
	t.Helper()
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	if err := unix.Flock(fd, unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
}

// The waits of the opens with options of their own end with ctx too: a
// reader with NoTurnstile at meta.db's flock, a writer with HoldTurnstile
// at the turnstile it keeps. Neither opens, neither is ErrLockTimeout.
func TestOpenContextEndsOptionsWaits(t *testing.T) {
	for _, c := range []struct {
		name  string
		write bool
		opts  Options
		held  func(kd keyDir) string
	}{
		{"reader without turnstile", false, Options{NoTurnstile: true}, func(kd keyDir) string { return kd.db }},
		{"writer holding the turnstile", true, Options{HoldTurnstile: true}, func(kd keyDir) string { return kd.path }},
	} {
		t.Run(c.name, func(t *testing.T) {
			kd := makeDB(t, 0)
			holdFlock(t, c.held(kd))
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			time.AfterFunc(50*time.Millisecond, cancel)
			open := OpenReaderContext
			if c.write {
				open = OpenWriterContext
			}
			c.opts.LockTimeout = 900 * time.Millisecond
			start := time.Now()
			d, err := open(ctx, kd.dir, kd.db, c.opts)
			if err == nil {
				d.Close()
				t.Fatal("opened, the lock held elsewhere")
			}
			if !errors.Is(err, context.Canceled) || errors.Is(err, ErrLockTimeout) {
				t.Fatalf("got %v, want context.Canceled and not ErrLockTimeout", err)
			}
			if took := time.Since(start); took >= c.opts.LockTimeout {
				t.Fatalf("gave up after %v, the whole LockTimeout", took)
			}
		})
	}
}

// sleep ends with its context, and sleeps its whole pause when the
// context never ends or ends after it.
func TestSleepEndsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	done := make(chan struct{})
	go func() { sleep(ctx, time.Hour); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("sleep(done ctx, 1h) still sleeping after 10 s")
	}
	for _, ctx := range []context.Context{context.Background(), t.Context()} {
		start := time.Now()
		sleep(ctx, 20*time.Millisecond)
		if took := time.Since(start); took < 20*time.Millisecond {
			t.Fatalf("sleep of 20 ms took %v", took)
		}
	}
}
