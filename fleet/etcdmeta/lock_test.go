package etcdmeta

import (
	"errors"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"sessdb/internal/etcdtest"
)

// shortLocks keeps the tests quick; the wait is still long enough for an
// uncontended lock on two loaded cores under -race. The lease is the
// default's (10 s): no test that takes it ends a lease by its TTL, and at
// 1 s a starved test binary (nice 19 beside four busy loops) saw the
// lease end under a lock that held it ("requested lease not found" at the
// mutex's request, 1 run of 3 of TestLockExcludes; 3 of 3 of
// TestALockTheClientSentAgainHoldsIt, another lock of the held key given
// it).
func shortLocks(c *Config) {
	c.LockTTL = DefaultLockTTL
	c.LockWait = 2 * time.Second
}

func TestLockExcludes(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	a, b := open(t, c, shortLocks), open(t, c, shortLocks)
	key := newKey()
	unlock, lost, err := a.Lock(ctx(t), key)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.Lock(ctx(t), key); !errors.Is(err, ErrLocked) {
		t.Fatalf("second holder: err = %v, want ErrLocked", err)
	}
	// Another key is not affected.
	u2, _, err := b.Lock(ctx(t), newKey())
	if err != nil {
		t.Fatal(err)
	}
	u2()
	unlock()
	select {
	case <-lost:
	case <-time.After(10 * time.Second):
		t.Fatal("lost not closed by unlock")
	}
	unlock() // a second call does nothing
	u3, _, err := b.Lock(ctx(t), key)
	if err != nil {
		t.Fatalf("lock after unlock: %v", err)
	}
	u3()
	if n := countKeys(t, a, a.lockDir(key)); n != 0 {
		t.Fatalf("%d lock keys left after every unlock", n)
	}
}

func countKeys(t *testing.T, s *Store, prefix string) int64 {
	t.Helper()
	resp, err := s.cli.Get(ctx(t), prefix, clientPrefix()...)
	if err != nil {
		t.Fatal(err)
	}
	return resp.Count
}

// lockLease returns the lease behind the one holder of key's lock.
func lockLease(t *testing.T, s *Store, key string) clientv3.LeaseID {
	t.Helper()
	resp, err := s.cli.Get(ctx(t), s.lockDir(key), clientv3.WithPrefix())
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("lock keys: %v, %v; want one", resp, err)
	}
	return clientv3.LeaseID(resp.Kvs[0].Lease)
}

// A worker that dies holding a lock (its connection gone, its lease not
// revoked) keeps it only until the lease runs out.
func TestLockOfADeadWorkerEndsWithItsLease(t *testing.T) {
	etcdtest.Beside(t)
	testDeadWorker(t, etcdtest.Start1(t))
}

func TestLockOfADeadWorkerEndsWithItsLease3(t *testing.T) {
	etcdtest.Beside(t)
	testDeadWorker(t, etcdtest.Start3(t))
}

func testDeadWorker(t *testing.T, c *etcdtest.Cluster) {
	dead := open(t, c, func(c *Config) { c.LockTTL = 3 * time.Second })
	alive := open(t, c, func(c *Config) { c.LockWait = 30 * time.Second })
	key := newKey()
	if _, _, err := dead.Lock(ctx(t), key); err != nil {
		t.Fatal(err)
	}
	lease := lockLease(t, alive, key)
	dead.cli.Close() // a crash: no unlock, no revoke
	if ttl, err := alive.cli.TimeToLive(ctx(t), lease); err != nil || ttl.TTL < 0 || ttl.GrantedTTL != 3 {
		t.Fatalf("the dead worker's lease is already gone (%+v, %v): the test would prove nothing", ttl, err)
	}
	start := time.Now()
	unlock, _, err := alive.Lock(ctx(t), key)
	if err != nil {
		t.Fatalf("lock after the holder died: %v", err)
	}
	defer unlock()
	t.Logf("lock taken over %v after the holder died (TTL 3 s)", time.Since(start))
	if ttl, err := alive.cli.TimeToLive(ctx(t), lease); err != nil || ttl.TTL != -1 {
		t.Fatalf("the dead worker's lease still lives (%+v, %v)", ttl, err)
	}
}

// A holder whose lease ends under it (expired while it was cut off) is
// told so on lost, and another worker gets the lock.
func TestLockLostWhenItsLeaseEnds(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	holder, other := open(t, c, shortLocks), open(t, c, shortLocks)
	key := newKey()
	unlock, lost, err := holder.Lock(ctx(t), key)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	select {
	case <-lost:
		t.Fatal("lost closed while the lock is held")
	default:
	}
	if _, err := other.cli.Revoke(ctx(t), lockLease(t, other, key)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-lost:
	case <-time.After(30 * time.Second):
		t.Fatal("lost not closed after the lease ended")
	}
	u, _, err := other.Lock(ctx(t), key)
	if err != nil {
		t.Fatalf("lock after the holder's lease ended: %v", err)
	}
	u()
}
