package etcdmeta

import (
	"context"
	"errors"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"sessdb/internal/faults"
)

// Lock takes key's lock: an etcd lease of LockTTL and a concurrency.Mutex
// under <prefix>/lock/<key>, for the few operations that must exclude each
// other (reap and repair of one key against promotions; a promotion itself
// needs no lock, its write is guarded). It waits at most LockWait for
// another holder (ErrLocked), and at most the request timeout for etcd
// (ErrUnavailable).
//
// The lock ends when unlock is called, or when its lease does: a holder
// that dies or loses etcd for LockTTL loses the lock, and lost is then
// closed (it is closed by unlock too). A holder must watch lost, or guard
// its writes by revision as every write here is, since a lock can end
// under a holder that is merely slow. unlock revokes the lease, waiting at
// most the request timeout; it may be called more than once.
func (s *Store) Lock(ctx context.Context, key string) (unlock func(), lost <-chan struct{}, err error) {
	ctx = orBackground(ctx)
	c, cancel, err := s.begin(ctx, "lock", key)
	if err != nil {
		return nil, nil, err
	}
	defer cancel()
	// The lease is granted here rather than by NewSession so that the
	// grant is bounded by the request timeout; the session's own context
	// lives as long as the lock.
	lease, err := s.cli.Grant(c, s.cfg.lockTTLSeconds())
	if err != nil {
		return nil, nil, s.cfg.opErr(ctx, "lock", key, err)
	}
	if err := faults.At(faults.EtcdLockGranted); err != nil {
		s.revoke(lease.ID)
		return nil, nil, fmt.Errorf("lock %s: %w", key, err)
	}
	held, release := context.WithCancel(context.Background())
	sess, err := concurrency.NewSession(s.cli, concurrency.WithLease(lease.ID), concurrency.WithContext(held))
	if err != nil {
		release()
		s.revoke(lease.ID)
		return nil, nil, s.cfg.opErr(ctx, "lock", key, err)
	}
	unlock = func() {
		sess.Orphan() // stop the keep-alive; the revoke below ends the lease
		s.revoke(lease.ID)
		release()
	}
	if err := s.acquire(ctx, key, concurrency.NewMutex(sess, s.lockDir(key))); err != nil {
		unlock()
		return nil, nil, err
	}
	return unlock, sess.Done(), nil
}

// acquire takes the mutex: first a try bounded by the request timeout,
// which is all an uncontended lock costs; then, if another holds it, a
// wait of at most LockWait. Without the try, the mutex's first request
// had no bound but LockWait: a link that went silent after the lease's
// grant held the caller for the whole wait, and then read as "locked".
// Mutex.Lock cleans up after a failed wait with a request that has no
// deadline of its own; it runs apart, so that etcd going away mid-wait
// cannot hang the caller (the revoke in Lock's cleanup removes the
// waiter's key in any case, and Close ends the request).
func (s *Store) acquire(ctx context.Context, key string, m *concurrency.Mutex) error {
	try, cancel := context.WithTimeout(ctx, s.cfg.RequestTimeout)
	err := m.TryLock(try)
	cancel()
	switch {
	case err == nil:
		return nil
	case !errors.Is(err, concurrency.ErrLocked):
		// Unanswered: the waiter's key, if its put landed, goes with the
		// lease Lock revokes.
		return s.cfg.opErr(ctx, "lock", key, err)
	}
	c, cancel := context.WithTimeout(ctx, s.cfg.LockWait)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- m.Lock(c) }()
	select {
	case err = <-done:
	case <-c.Done():
		// Mutex.Lock returns soon after its context ends, once its
		// cleanup request is answered; m is its own until then.
		select {
		case err = <-done:
		case <-time.After(s.cfg.RequestTimeout):
			return fmt.Errorf("lock %s: %w: %w", key, ErrUnavailable, c.Err())
		}
	}
	switch {
	case err == nil:
		return nil
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil && m.Key() == "\x00":
		// The mutex's cleanup removed its waiter's key ("\x00" is its
		// mark of that), so etcd answered: someone else held the lock
		// for the whole wait. (A key name alone proves nothing: the
		// mutex names it before its first request is sent.) Unless what
		// it waited for is a key with no lease, which no holder writes
		// (another tenant's, or one put by hand): that one never ends,
		// and "locked" would send the operator back for ever.
		if junk := s.leaseless(ctx, key); junk != "" {
			return fmt.Errorf("lock %s: %w: %s holds no lease, so it is no holder's lock and never ends; remove it with etcdctl del", key, ErrDamaged, junk)
		}
		return fmt.Errorf("lock %s: %w", key, ErrLocked)
	}
	return s.cfg.opErr(ctx, "lock", key, err)
}

// leaseless returns a key in key's lock dir that has no lease, or "" for
// none (or when the read fails: the wait's own error stands then).
func (s *Store) leaseless(ctx context.Context, key string) string {
	c, cancel := context.WithTimeout(ctx, s.cfg.RequestTimeout)
	defer cancel()
	// Not keys only: etcd answers that from its index alone, without
	// the leases.
	resp, err := s.cli.Get(c, s.lockDir(key)+"/", clientv3.WithPrefix())
	if err != nil {
		return ""
	}
	for _, kv := range resp.Kvs {
		if kv.Lease == 0 {
			return string(kv.Key)
		}
	}
	return ""
}

func (s *Store) revoke(id clientv3.LeaseID) {
	c, cancel := context.WithTimeout(context.Background(), s.cfg.RequestTimeout)
	defer cancel()
	s.cli.Revoke(c, id) // a revoke that fails leaves the lease to expire
}
