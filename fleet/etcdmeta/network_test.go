package etcdmeta

import (
	"errors"
	"testing"
	"time"

	"sessdb/internal/etcdtest"
	"sessdb/internal/faults"
)

// A lock whose link to etcd goes silent after its lease was granted (a
// blackhole: the connection stays, no byte comes back) is etcd
// unavailable within the request timeout. It was "locked by another
// holder" after the whole LockWait: the mutex's first request had no
// bound but the wait for a holder, and the waiter's key, named before
// that request is sent, was taken for etcd's answer.
func TestLockLosingEtcdAfterItsGrantIsUnavailable(t *testing.T) {
	c := etcdtest.Start1(t)
	p := etcdtest.NewProxy(t, c.Endpoint(0))
	const timeout, wait = 300 * time.Millisecond, 5 * time.Second
	s := open(t, c, func(cfg *Config) {
		cfg.Endpoints, cfg.RequestTimeout, cfg.LockWait = []string{p.URL()}, timeout, wait
	})
	key := newKey()
	if _, err := s.GetRecord(ctx(t), key); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { faults.Set(nil) })
	faults.Set(func(pt faults.Point) error {
		if pt == faults.EtcdLockGranted {
			p.Blackhole()
		}
		return nil
	})
	began := time.Now()
	_, _, err := s.Lock(ctx(t), key)
	took := time.Since(began)
	t.Logf("lock blackholed after its grant: %v after %v", err, took)
	if !errors.Is(err, ErrUnavailable) || took >= 3*timeout {
		t.Fatalf("lock blackholed after its grant = %v after %v; want etcd unavailable within the request timeout (%v) and the lease's revoke", err, took, timeout)
	}
	// Healed, the held requests are delivered: the try's waiter key may
	// land late and hold the key until its lease's TTL, as any lock a
	// holder lost etcd under does. Another key locks at once.
	faults.Set(nil)
	p.Heal()
	unlock, _, err := s.Lock(ctx(t), newKey())
	if err != nil {
		t.Fatalf("lock once healed: %v", err)
	}
	unlock()
}
