package etcdmeta

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"sessdb/internal/etcdtest"
)

// silentFirstKV is a Store's KV whose reads under prefix go unanswered
// where they go the balancer's way (a try not pinned to one endpoint),
// as when each meets a silent member: answered only as tries sent again.
type silentFirstKV struct {
	clientv3.KV
	prefix string
	held   atomic.Int32 // reads left unanswered
}

func (k *silentFirstKV) Get(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	if _, pinned := ctx.Value(pinKey{}).(int); !pinned && strings.HasPrefix(key, k.prefix) {
		k.held.Add(1)
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return k.KV.Get(ctx, key, opts...)
}

// Every read of a lock's wait is hedged: the polls of who holds the
// lock, and the last read whose answer is the verdict. Here each read of
// the lock's dir sent the balancer's way goes unanswered, as one meeting
// a silent member does. A lock its holder releases while the waiter
// waits is taken, and one its holder keeps is "locked" at the wait's
// end: a read of the wait sent once waited out its timeout and failed,
// the released lock seen only by the verdict's read at the wait's end,
// and the kept one "etcd unavailable".
func TestEveryReadOfALocksWaitIsHedged(t *testing.T) {
	etcdtest.Beside(t)
	etcdtest.PaceAttempts(t, time.Second, func(p *etcdtest.Pace) {
		c := etcdtest.Start3(t)
		timeout := paceOn(t, p, c)
		wait := 4 * timeout
		waiter := open(t, c, func(cfg *Config) { cfg.RequestTimeout, cfg.LockWait = timeout, wait })
		holder := open(t, c, func(cfg *Config) { cfg.RequestTimeout = timeout })
		key := newKey()
		kv := &silentFirstKV{KV: waiter.cli.KV, prefix: waiter.lockDir(key) + "/"}
		waiter.cli.KV = kv

		// Kept: the verdict is etcd's answer that another holds it.
		unlock, _, err := holder.Lock(ctx(t), key)
		if err != nil {
			p.Errorf("the holder's lock: %v", err)
			return
		}
		if _, _, err := waiter.Lock(ctx(t), key); !errors.Is(err, ErrLocked) {
			p.Errorf("a lock its holder kept, every read of the wait's first try unanswered = %v; want %v", err, ErrLocked)
			unlock()
			return
		}
		// Released while the waiter waits: taken.
		took := make(chan error, 1)
		go func() {
			unlockW, _, err := waiter.Lock(ctx(t), key)
			if err == nil {
				unlockW()
			}
			took <- err
		}()
		time.Sleep(wait / 4)
		released := time.Now()
		unlock()
		if err := <-took; err != nil {
			p.Errorf("a lock released while its waiter waited, every read of the wait's first try unanswered = %v; want it taken", err)
		} else if after := time.Since(released); after > wait/2 {
			// A poll's try sent again answers at a third of the timeout;
			// only the verdict's read, at the wait's end, sees it otherwise.
			p.Errorf("a lock released while its waiter waited was taken %v after, the wait %v; want it seen by a poll, within half the wait", after.Round(time.Millisecond), wait)
		}
		if kv.held.Load() == 0 {
			t.Fatal("no read of the lock's dir was left unanswered: the test proves nothing")
		}
	})
}
