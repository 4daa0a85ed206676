package db

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// waitsEnded gives up each of n opens of other's meta.db in its wait for
// a lock held elsewhere (every fourth its context done before the open,
// the rest ended by a deadline a few microseconds on, mid-wait), and
// wants every one to fail with the context's error, never ErrLockTimeout,
// and nothing left behind: no goroutine, no descriptor, no in-process
// lock or waiting writer, no timer's worth of heap per wait.
func waitsEnded(t *testing.T, other keyDir, n int) {
	t.Helper()
	settle := func() (goroutines, fds int, heap uint64) {
		var ms runtime.MemStats
		for range 3 {
			runtime.GC()
		}
		runtime.ReadMemStats(&ms)
		return runtime.NumGoroutine(), openFDs(), ms.HeapAlloc
	}
	g0, f0, h0 := settle()
	for i := range n {
		var ctx context.Context
		var cancel context.CancelFunc
		if i%4 == 0 {
			ctx, cancel = context.WithCancel(context.Background())
			cancel()
		} else {
			ctx, cancel = context.WithTimeout(context.Background(), time.Duration(i%7)*time.Microsecond)
		}
		open := OpenReaderContext
		if i%2 == 1 {
			open = OpenWriterContext
		}
		d, err := open(ctx, other.dir, other.db, Options{LockTimeout: 5 * time.Second})
		cancel()
		if err == nil {
			d.Close()
			t.Fatalf("open %d: opened a db whose lock is held", i)
		}
		if errors.Is(err, ErrLockTimeout) || !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("open %d: %v, want the context's error", i, err)
		}
	}
	g1, f1, h1 := settle()
	if g1 > g0 {
		t.Errorf("%d goroutines after %d waits ended by their contexts, %d before", g1, n, g0)
	}
	if f1 != f0 {
		t.Errorf("%d descriptors open after %d waits ended by their contexts, %d before", f1, n, f0)
	}
	// A leaked timer, context or lock entry per wait is well over 100
	// bytes; the loop's own garbage is collected.
	if h1 > h0 && h1-h0 > uint64(n)*16 {
		t.Errorf("heap grew by %d bytes over %d waits ended by their contexts", h1-h0, n)
	}
	if w := writersWaitingFor(other); w != 0 {
		t.Errorf("%d writers still counted as waiting", w)
	}
}

// writersWaitingFor is the count of writers waiting for kd's in-process
// lock, 0 when the table has no entry for it.
func writersWaitingFor(kd keyDir) int {
	var st unix.Stat_t
	if err := unix.Fstat(int(kd.dir.Fd()), &st); err != nil {
		return -1
	}
	keyLocks.Lock()
	defer keyLocks.Unlock()
	if l := keyLocks.m[keyID{uint64(st.Dev), st.Ino}]; l != nil {
		return l.writersWaiting
	}
	return 0
}

// 10,000 waits for each lock an open takes (the in-process lock, the
// turnstile, meta.db's flock), each ended by its context, leak nothing,
// and the lock is had at once after them.
func TestOpenContextWaitsEndedLeakNothing(t *testing.T) {
	const n = 10_000
	kd := makeDB(t, 0)
	other := openKeyDir(t, kd.path)
	t.Run("in-process lock", func(t *testing.T) {
		w := mustOpen(t, kd, true)
		waitsEnded(t, other, n)
		w.Close()
		if c := keyLockCount(); c != 0 {
			t.Errorf("%d in-process locks left in the table", c)
		}
	})
	t.Run("turnstile", func(t *testing.T) {
		fd, err := unix.Open(kd.path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer unix.Close(fd)
		if err := unix.Flock(fd, unix.LOCK_EX); err != nil {
			t.Fatal(err)
		}
		waitsEnded(t, other, n)
	})
	t.Run("file lock", func(t *testing.T) {
		fd, err := unix.Open(kd.db, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer unix.Close(fd)
		if err := unix.Flock(fd, unix.LOCK_EX); err != nil {
			t.Fatal(err)
		}
		waitsEnded(t, other, n)
	})
	d, err := OpenWriterContext(context.Background(), other.dir, other.db, Options{LockTimeout: time.Nanosecond})
	if err != nil {
		t.Fatalf("open after the waits: %v", err)
	}
	d.Close()
}
