package db

import (
	"context"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// keyID names a key directory by device and inode: a path can be renamed or
// reached through two spellings, the directory it opens cannot.
type keyID struct{ dev, ino uint64 }

// keyLock is a reader/writer lock with a deadline. sync.RWMutex cannot give
// up waiting, and a lock that waits forever would turn one stuck promotion
// into a stuck worker.
type keyLock struct {
	refs           int  // holders and waiters; at 0 the entry leaves the table
	readers        int  // shared holders
	writer         bool // an exclusive holder
	writersWaiting int  // writers queued; while any is, new readers wait too
	// wake is closed and replaced whenever the lock may have become free.
	// A closed channel wakes every waiter at once and can be selected on
	// beside a timer, which is the timed wait sync.Cond does not offer.
	wake chan struct{}
}

// keyLocks is the process-wide table of key locks. flock alone cannot order
// two opens inside one process: a second open of the same file is a second
// open file description and waits on the first as if it were another
// process, by polling.
var keyLocks = struct {
	sync.Mutex
	m map[keyID]*keyLock
}{m: map[keyID]*keyLock{}}

// lockKey takes the key's in-process lock, shared or exclusive, waiting no
// later than deadline. The unlock it returns is safe to call more than once.
// Waiting writers hold back new readers, so a stream of resolves cannot
// starve a promotion. It gives up early, with ctx's error (never
// ErrLockTimeout: the caller gave up, the lock was not found held too long),
// once ctx is done.
func lockKey(ctx context.Context, id keyID, write bool, deadline time.Time) (unlock func(), err error) {
	keyLocks.Lock()
	l := keyLocks.m[id]
	if l == nil {
		l = &keyLock{wake: make(chan struct{})}
		keyLocks.m[id] = l
	}
	// The reference is taken before waiting, so that the entry, and the
	// wake channel this goroutine waits on, stay in the table until it
	// leaves, whether it gets the lock or gives up.
	l.refs++
	if write {
		l.writersWaiting++
	}
	for {
		if write && !l.writer && l.readers == 0 {
			l.writer = true
			l.writersWaiting--
			break
		}
		if !write && !l.writer && l.writersWaiting == 0 {
			l.readers++
			break
		}
		wait := time.Until(deadline)
		cerr := ctx.Err()
		if wait <= 0 || cerr != nil {
			if write {
				l.writersWaiting--
				l.broadcast() // readers held back by this writer may go
			}
			l.release(id)
			keyLocks.Unlock()
			mode := "shared"
			if write {
				mode = "exclusive"
			}
			if cerr != nil {
				return nil, fmt.Errorf("waiting for the %s in-process lock: %w", mode, cerr)
			}
			return nil, fmt.Errorf("%w: %s in-process lock held by another handle", ErrLockTimeout, mode)
		}
		// The channel is read under the table's mutex, so a broadcast
		// after the Unlock closes this very channel: a wake between the
		// Unlock and the select is not lost.
		wake := l.wake
		keyLocks.Unlock()
		t := time.NewTimer(wait)
		select {
		case <-wake:
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
		keyLocks.Lock()
	}
	keyLocks.Unlock()

	// Once: a second call would release a share that another holder
	// owns (readers is a count, not a set), or clear a writer flag that a
	// later writer set.
	var once sync.Once
	return func() {
		once.Do(func() {
			keyLocks.Lock()
			defer keyLocks.Unlock()
			if write {
				l.writer = false
			} else {
				l.readers--
			}
			l.broadcast()
			l.release(id)
		})
	}, nil
}

func (l *keyLock) broadcast() {
	close(l.wake)
	l.wake = make(chan struct{})
}

// release drops one reference; the caller holds keyLocks.
func (l *keyLock) release(id keyID) {
	l.refs--
	if l.refs == 0 {
		delete(keyLocks.m, id)
	}
}

// flockUntil takes flock on fd, polling with LOCK_NB: flock has no timeout,
// and a blocking flock in a goroutine could not be abandoned without leaking
// a thread that might still take the lock later. It gives up early, with
// ctx's error (never ErrLockTimeout), once ctx is done: checked before each
// poll, and a pause between two polls ends with ctx.
func flockUntil(ctx context.Context, fd int, write bool, deadline time.Time) error {
	how := unix.LOCK_SH
	if write {
		how = unix.LOCK_EX
	}
	pause := time.Millisecond
	for {
		err := unix.Flock(fd, how|unix.LOCK_NB)
		switch err {
		case nil:
			return nil
		case unix.EINTR:
			// A signal (the Go runtime preempts goroutines with SIGURG)
			// interrupted the call; nothing was decided.
			continue
		case unix.EWOULDBLOCK:
		default:
			return err
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("waiting for the file lock: %w", err)
		}
		wait := time.Until(deadline)
		if wait <= 0 {
			return fmt.Errorf("%w: file lock held by another open file (another process, most likely)", ErrLockTimeout)
		}
		// Doubling from 1 ms: a lock held for one commit (a few fsyncs)
		// is usually had within the first polls, and the 25 ms cap bounds
		// how late a waiter notices a lock freed after a long hold, at one
		// system call per 25 ms while it waits.
		sleep(ctx, min(pause, wait))
		pause = min(2*pause, 25*time.Millisecond)
	}
}

// sleep pauses for d, or until ctx is done. A context that is never done
// (context.Background's) sleeps as before, with no timer to make.
func sleep(ctx context.Context, d time.Duration) {
	done := ctx.Done()
	if done == nil {
		time.Sleep(d)
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-done:
	}
}
