package etcdmeta

import (
	"errors"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"sessdb/internal/etcdtest"
)

// etcd's client sends a write again by itself when its answer is a
// context error's while the caller's context lives (LoseNextAs): the
// caller sees only the second send's answer, a conflict with the first,
// served. The conflict says so (Resent), since a delete, landed, leaves
// nothing to be told from another's by; a conflict of a write sent once
// does not. Put and Create find their own record, which names their
// file.
func TestAConflictSaysTheClientSentTheWriteAgain(t *testing.T) {
	etcdtest.Beside(t)
	const txn = "/etcdserverpb.KV/Txn"
	c := etcdtest.Start(t, etcdtest.Options{Members: 1, InProcess: true})
	t.Cleanup(func() { c.LoseNextAs(txn, 0, 0, codes.DeadlineExceeded) })
	s := open(t, c)
	conflict := func(what string, err error, resent bool) *ConflictError {
		t.Helper()
		var ce *ConflictError
		if !errors.As(err, &ce) || ce.Resent != resent {
			t.Fatalf("%s: %v (%+v); want a conflict, Resent %v", what, err, ce, resent)
		}
		return ce
	}

	key := newKey()
	rev := mustPut(t, s, key, 0, 1)
	_, err := s.Delete(ctx(t), key, rev+1)
	conflict("a delete on a base gone, sent once", err, false)
	c.LoseNextAs(txn, 0, 1, codes.DeadlineExceeded)
	_, err = s.Delete(ctx(t), key, rev)
	if ce := conflict("a delete sent again", err, true); ce.Current.Rev != 0 {
		t.Fatalf("a delete sent again: the key holds a record at %d", ce.Current.Rev)
	}

	key = newKey()
	rec := record(key, 1)
	c.LoseNextAs(txn, 0, 1, codes.Canceled)
	_, err = s.Create(ctx(t), key, rec, []HistoryEntry{{Seq: 1, Gen: 1, Ticket: randHex(16)}})
	if ce := conflict("a create sent again", err, true); ce.Current.Record.Transcript == nil || ce.Current.Record.Transcript.File != rec.Transcript.File {
		t.Fatalf("a create sent again: the key holds %+v, want its own record", ce.Current.Record)
	}
	_, err = s.Create(ctx(t), key, rec, nil)
	conflict("a create on a key held, sent once", err, false)

	st, err := s.GetRecord(ctx(t), key)
	if err != nil {
		t.Fatal(err)
	}
	rec = record(key, 2)
	// A put with a slot remembered sends its transaction first.
	c.LoseNextAs(txn, 0, 1, codes.DeadlineExceeded)
	_, err = s.Put(ctx(t), key, st.Rev, rec, entry(2, randHex(16)))
	if ce := conflict("a put sent again", err, true); ce.Current.Record.Transcript == nil || ce.Current.Record.Transcript.File != rec.Transcript.File {
		t.Fatalf("a put sent again: the key holds %+v, want its own record", ce.Current.Record)
	}
	_, err = s.Put(ctx(t), key, st.Rev, record(key, 2), entry(2, randHex(16)))
	conflict("a put on a base gone, sent once", err, false)
}

// A lock whose mutex request etcd's client sent again itself (its first
// send landed, its answer lost as a context error's) finds the waiter's
// key in place, the one it put: the lock is held at once, its place in
// the queue that key's create revision, not the revision the second send
// was answered at (another key written meanwhile, as on any busy
// cluster, puts that past it: the lock then waited for itself and was
// "locked by another holder"). It excludes, and its release frees it.
func TestALockTheClientSentAgainHoldsIt(t *testing.T) {
	etcdtest.Beside(t)
	const txn = "/etcdserverpb.KV/Txn"
	c := etcdtest.Start(t, etcdtest.Options{Members: 1, InProcess: true})
	// The lock under test waits 20 s for a holder: one that waited for
	// itself ends locked after it, and is told by that. The wait is long
	// so that the bound on the time it took is no guess at the machine's
	// speed: starved (nice 19 beside four busy loops, the noise's puts
	// beside it), the lock held at once took 2.9 to 6.5 s, past
	// shortLocks' 2 s, 5 runs of 5.
	a, b := open(t, c, shortLocks, func(c *Config) { c.LockWait = 20 * time.Second }), open(t, c, shortLocks)
	t.Cleanup(func() { c.LoseNextAs(txn, 0, 0, codes.DeadlineExceeded) })
	key := newKey()
	stop, nctx := make(chan struct{}), ctx(t)
	var noise sync.WaitGroup
	noise.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
				b.cli.Put(nctx, "/resent-noise", "x")
			}
		}
	})
	// The lock's first Txn is its mutex's request.
	c.LoseNextAs(txn, 0, 1, codes.DeadlineExceeded)
	start := time.Now()
	unlock, _, err := a.Lock(ctx(t), key)
	close(stop)
	noise.Wait()
	if err != nil {
		t.Fatalf("lock: %v", err)
	}
	if waited := time.Since(start); waited >= a.cfg.LockWait {
		t.Errorf("the lock took %v, its whole LockWait: it waited for itself", waited)
	}
	if _, _, err := b.Lock(ctx(t), key); !errors.Is(err, ErrLocked) {
		t.Fatalf("another lock of the held key: %v, want ErrLocked", err)
	}
	if n, k := leases(t, c), countKeys(t, a, a.lockDir(key)); n != 1 || k != 1 {
		t.Errorf("held: %d leases holding keys, %d lock keys; want 1 and 1", n, k)
	}
	unlock()
	if n, k := leases(t, c), countKeys(t, a, a.lockDir(key)); n != 0 || k != 0 {
		t.Errorf("released: %d leases holding keys, %d lock keys; want none", n, k)
	}
}
