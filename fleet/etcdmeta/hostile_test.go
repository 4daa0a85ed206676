package etcdmeta

import (
	"errors"
	"strings"
	"testing"

	"sessdb/internal/etcdtest"
)

// A key in a lock's dir with no lease (another tenant's, or written by
// hand) is no holder's lock and never ends: Lock says so, naming it and
// what removes it, rather than that another holder has the key, which
// would send the operator to run check again for ever.
func TestLockDirJunkIsNamed(t *testing.T) {
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
