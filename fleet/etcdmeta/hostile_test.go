package etcdmeta

import (
	"errors"
	"strings"
	"testing"
	"time"

	"sessdb/internal/etcdtest"
)

// A key in a lock's dir with no lease (another tenant's, or written by
// hand) is no holder's lock and never ends: Lock says so, naming it and
// what removes it, rather than that another holder has the key, which
// would send the operator to run check again for ever.
func TestLockDirJunkIsNamed(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	s := open(t, c, shortLocks)
	key := newKey()
	junk := s.lockDir(key) + "/junk"
	if _, err := c.Client(t).Put(ctx(t), junk, "x"); err != nil {
		t.Fatal(err)
	}
	_, _, err := s.Lock(ctx(t), key)
	if !errors.Is(err, ErrDamaged) || errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), junk) {
		t.Fatalf("Lock = %v; want ErrDamaged naming %s", err, junk)
	}
	// A holder with a lease is still another holder.
	if _, err := c.Client(t).Delete(ctx(t), junk); err != nil {
		t.Fatal(err)
	}
	unlock, _, err := s.Lock(ctx(t), key)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	if _, _, err := open(t, c, shortLocks).Lock(ctx(t), key); !errors.Is(err, ErrLocked) {
		t.Fatalf("a second holder: %v, want ErrLocked", err)
	}
}

// A key with no lease in a lock's dir stands in the way of a waiter only
// when it is ahead of the waiter's key in the queue. Put after it (by
// hand, or another tenant's), while a holder lives, the waiter's verdict
// is that the key is locked: that holder's release gives it the lock,
// and the junk is the next waiter's to name. Before, any such key in the
// dir made the verdict ErrDamaged, naming a key the waiter never waited
// for, while the key was plainly locked; one ahead of it is still named.
func TestLockDirJunkBehindTheWaiterIsNotItsVerdict(t *testing.T) {
	etcdtest.Beside(t)
	for _, ahead := range []bool{false, true} {
		name := "behind"
		if ahead {
			name = "ahead"
		}
		t.Run(name, func(t *testing.T) {
			c := etcdtest.Start1(t)
			holder, waiter := open(t, c, shortLocks), open(t, c, shortLocks)
			key := newKey()
			unlock, _, err := holder.Lock(ctx(t), key)
			if err != nil {
				t.Fatal(err)
			}
			defer unlock()
			// Named to sort first, whatever the leases' names: the queue
			// is by creation, not by name.
			junk := holder.lockDir(key) + "/0junk"
			putJunk := func() {
				if _, err := c.Client(t).Put(ctx(t), junk, "x"); err != nil {
					t.Fatal(err)
				}
			}
			if ahead {
				putJunk()
			}
			done := make(chan error, 1)
			go func() {
				u, _, err := waiter.Lock(ctx(t), key)
				if u != nil {
					u()
				}
				done <- err
			}()
			if !ahead {
				// A waiter that ends before its key is in the dir fails
				// the test, not hangs it (it did, with a 1 s lease that
				// ended under a starved test binary).
				for countKeys(t, holder, holder.lockDir(key)) < 2 {
					select {
					case err := <-done:
						t.Fatalf("the waiter ended before its key was in the lock's dir: %v", err)
					case <-time.After(10 * time.Millisecond):
					}
				}
				putJunk()
			}
			err = <-done
			switch {
			case ahead && (!errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), junk)):
				t.Errorf("a waiter with a leaseless key ahead of it: %v; want ErrDamaged naming %s", err, junk)
			case !ahead && (!errors.Is(err, ErrLocked) || errors.Is(err, ErrDamaged)):
				t.Errorf("a waiter behind a live holder, a leaseless key put after it: %v; want ErrLocked", err)
			}
		})
	}
}
