package etcdmeta

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"sessdb/internal/callerctx"
	"sessdb/internal/faults"
)

// Lock takes key's lock: an etcd lease of LockTTL and a concurrency.Mutex
// under <prefix>/lock/<key>, for the few operations that must exclude each
// other (reap and repair of one key against promotions; a promotion itself
// needs no lock, its write is guarded). It waits at most LockWait for
// another holder, then the request timeout for etcd's last answer that
// another holds it (ErrLocked), and at most the request timeout for etcd
// (ErrUnavailable). With several endpoints, the lease's grant, the
// mutex's first request, the wait's reads and the release are hedged as
// reads are (Hedge): one silent member does not cost a lock the whole
// timeout, nor a wait for a holder its LockWait. A lock sent again holds
// one waiter's key at most, named by the one lease kept.
//
// The lock ends when unlock is called, or when its lease does: a holder
// that dies or loses etcd for LockTTL loses the lock, and lost is then
// closed (it is closed by unlock too). A holder must watch lost, or guard
// its writes by revision as every write here is, since a lock can end
// under a holder that is merely slow. unlock revokes the lease, waiting at
// most the request timeout; it may be called more than once.
func (s *Store) Lock(ctx context.Context, key string) (unlock func(), lost <-chan struct{}, err error) {
	ctx = callerctx.Of(ctx)
	c, cancel, err := s.begin(ctx, "lock", key)
	if err != nil {
		return nil, nil, err
	}
	defer cancel()
	// The lease is granted here rather than by NewSession so that the
	// grant is bounded by the request timeout; the session's own context
	// lives as long as the lock.
	lease, err := s.grant(c)
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
	if err := s.acquire(ctx, key, sess); err != nil {
		unlock()
		return nil, nil, err
	}
	return unlock, sess.Done(), nil
}

// errGrantedTwice is a hedged grant's answer after another try's was
// taken: not the grant's answer (see grant).
var errGrantedTwice = errors.New("lease granted by another try")

// grant grants the lock's lease, hedged (see Hedge): a member that
// answers nothing would otherwise cost the lock, and a reap or repair the
// rest of its walk, the whole timeout. A grant sent again may be granted
// twice: a try answered after another was taken revokes its lease at
// once. One whose answer never comes (cancelled once another answered,
// or lost) cannot be revoked, unknown; like every such lease it holds no
// key, so no lock, and ends with its TTL.
func (s *Store) grant(c context.Context) (*clientv3.LeaseGrantResponse, error) {
	var taken atomic.Bool
	return Hedge(s, c, func(c context.Context) (*clientv3.LeaseGrantResponse, error) {
		lease, err := s.cli.Grant(c, s.cfg.lockTTLSeconds())
		if err == nil && !taken.CompareAndSwap(false, true) {
			s.revoke(lease.ID)
			return nil, errGrantedTwice
		}
		return lease, err
	}, func(err error) bool { return c.Err() == nil && !errors.Is(err, errGrantedTwice) }, nil)
}

// tryLock is the mutex's first request (concurrency.Mutex's own): put the
// waiter's key, named by the session's lease, if it is not there, and
// read the oldest waiter, the holder. It is hedged: every try is that one
// request, and a key named by the lease can be put once only (the
// compare), so however many tries land the session holds one waiter's
// key, which the lease's revoke removes; a try that lands late, after
// that revoke, is refused for its lease. It returns the key's create
// revision, its place in the queue, and whether the key is the holder's.
// Unlike Mutex.TryLock, it does not delete the key when another holds
// the lock: the wait that follows (see acquire) waits with it, and no
// delete sent by a try is left to land under that wait.
func (s *Store) tryLock(ctx context.Context, key string, sess *concurrency.Session) (int64, bool, error) {
	c, cancel := context.WithTimeout(ctx, s.cfg.RequestTimeout)
	defer cancel()
	// As concurrency.Mutex names it.
	dir := s.lockDir(key) + "/"
	mine := fmt.Sprintf("%s%x", dir, sess.Lease())
	holder := clientv3.OpGet(dir, clientv3.WithFirstCreate()...)
	resp, err := hedged(s, c, func(c context.Context) (*clientv3.TxnResponse, error) {
		return s.cli.Txn(c).If(clientv3.Compare(clientv3.CreateRevision(mine), "=", 0)).
			Then(clientv3.OpPut(mine, "", clientv3.WithLease(sess.Lease())), holder).
			Else(clientv3.OpGet(mine), holder).Commit()
	})
	if err != nil {
		return 0, false, err
	}
	rev := resp.Header.Revision
	if !resp.Succeeded {
		rev = resp.Responses[0].GetResponseRange().Kvs[0].CreateRevision
	}
	kvs := resp.Responses[1].GetResponseRange().Kvs
	return rev, len(kvs) == 0 || kvs[0].CreateRevision == rev, nil
}

// lockPoll is how often a lock that waits for another holder reads who
// holds it.
const lockPoll = 100 * time.Millisecond

// errWaiterGone is a waiting lock's answer when its waiter's key is gone:
// its lease ended.
var errWaiterGone = errors.New("its lease ended while it waited")

// holds reads whether the waiter's key at rev is the oldest in key's lock
// dir, the holder's, hedged as reads are.
func (s *Store) holds(ctx context.Context, key string, rev int64) (bool, error) {
	c, cancel := context.WithTimeout(ctx, s.cfg.RequestTimeout)
	defer cancel()
	resp, err := hedged(s, c, func(c context.Context) (*clientv3.GetResponse, error) {
		return s.cli.Get(c, s.lockDir(key)+"/", clientv3.WithFirstCreate()...)
	})
	switch {
	case err != nil:
		return false, err
	case len(resp.Kvs) == 0 || resp.Kvs[0].CreateRevision > rev:
		return false, errWaiterGone
	}
	return resp.Kvs[0].CreateRevision == rev, nil
}

// acquire takes the mutex: first a try bounded by the request timeout,
// which is all an uncontended lock costs; then, if another holds it, a
// wait of at most LockWait, reading every lockPoll who holds it, and a
// last read, its answer the verdict: held, or ErrLocked. Each request is
// hedged (see Hedge), so one silent member costs the wait no more than a
// read. concurrency.Mutex.Lock waited instead with requests sent once (a
// Txn, a watch, a read, and a delete once the wait ran out): the one sent
// to a silent member waited out the whole LockWait, and a lock its
// holder had released was "locked" or etcd unavailable. The waiter's key
// stays in the dir while it waits, keeping its place in the queue; the
// revoke of the lease in Lock's cleanup removes it.
func (s *Store) acquire(ctx context.Context, key string, sess *concurrency.Session) error {
	rev, held, err := s.tryLock(ctx, key, sess)
	switch {
	case err != nil:
		// Unanswered: the waiter's key, if its put landed, goes with the
		// lease Lock revokes.
		return s.cfg.opErr(ctx, "lock", key, err)
	case held:
		return nil
	}
	c, cancel := context.WithTimeout(ctx, s.cfg.LockWait)
	defer cancel()
	tick := time.NewTicker(lockPoll)
	defer tick.Stop()
	for c.Err() == nil {
		select {
		case <-c.Done():
		case <-tick.C:
			// Within the wait: an unanswered read waits for the next.
			held, err := s.holds(c, key, rev)
			switch {
			case err == nil && held:
				return nil
			case errors.Is(err, errWaiterGone):
				return fmt.Errorf("lock %s: %w: %w", key, ErrUnavailable, err)
			}
		}
	}
	if ctx.Err() != nil {
		return s.cfg.opErr(ctx, "lock", key, ctx.Err())
	}
	// The verdict is an answer: etcd's, read now, that another holds it.
	held, err = s.holds(ctx, key, rev)
	switch {
	case errors.Is(err, errWaiterGone):
		return fmt.Errorf("lock %s: %w: %w", key, ErrUnavailable, err)
	case err != nil:
		return s.cfg.opErr(ctx, "lock", key, err)
	case held:
		return nil
	}
	// Unless what it waited for is a key with no lease, which no holder
	// writes (another tenant's, or one put by hand): that one never ends,
	// and "locked" would send the operator back for ever. Only a key
	// ahead of the waiter's in the queue is waited for: one put after it
	// never stands in its way, and while a holder lives it is locked.
	if junk := s.leaseless(ctx, key, rev); junk != "" {
		return fmt.Errorf("lock %s: %w: %s holds no lease, so it is no holder's lock and never ends; remove it with etcdctl del", key, ErrDamaged, junk)
	}
	return fmt.Errorf("lock %s: %w", key, ErrLocked)
}

// leaseless returns a key in key's lock dir that has no lease and is
// ahead of the waiter's key, put at rev, in the queue, or "" for none (or
// when the read fails: the wait's own error stands then).
func (s *Store) leaseless(ctx context.Context, key string, rev int64) string {
	c, cancel := context.WithTimeout(ctx, s.cfg.RequestTimeout)
	defer cancel()
	// Not keys only: etcd answers that from its index alone, without
	// the leases.
	resp, err := hedged(s, c, func(c context.Context) (*clientv3.GetResponse, error) {
		return s.cli.Get(c, s.lockDir(key)+"/", clientv3.WithPrefix())
	})
	if err != nil {
		return ""
	}
	for _, kv := range resp.Kvs {
		if kv.Lease == 0 && kv.CreateRevision < rev {
			return string(kv.Key)
		}
	}
	return ""
}

// revoke ends lease id, hedged (see Hedge): sent to a member that answers
// nothing, every lock's release cost the whole timeout. A revoke sent
// again is answered "lease not found" once another landed.
func (s *Store) revoke(id clientv3.LeaseID) {
	c, cancel := context.WithTimeout(context.Background(), s.cfg.RequestTimeout)
	defer cancel()
	// A revoke that fails leaves the lease to expire.
	hedged(s, c, func(c context.Context) (*clientv3.LeaseRevokeResponse, error) { return s.cli.Revoke(c, id) })
}
