package fleet

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"sessdb/fleet/etcdmeta"
	"sessdb/gates"
	"sessdb/internal/etcdtest"
	"sessdb/internal/faults"
	"sessdb/migrate"
	"sessdb/store"
)

// A promoter's host is suspended (a VM paused, a machine asleep) for two
// hours while the first try of its commit goes unanswered (a member
// that answers nothing); meanwhile a reaper elsewhere sweeps the
// promotion's file, a generation above its record's and by then past the
// in-flight window. On resuming, the hedge's timer, which the suspension
// did not advance, sends the commit again to another member: that try
// must not go out, since the wall clock is past the commit window. Found
// by a review: Commit looked at the wall clock before each round of
// tries, but not before a try sent again, so the try landed, the
// promotion was reported promoted, and the key resolved
// transcript-replaced, the acknowledged conversation lost.
func TestAPromoterSuspendedWhileItsCommitWentUnansweredSendsNoTryAgain(t *testing.T) {
	c := etcdtest.Start3(t)
	f := newFixture(t, c)
	key := store.Key("github", "suspended", "hedge")
	f.run(key, "a")
	sess, _ := f.job(key, "b")

	const suspended = 2 * time.Hour
	var ahead atomic.Int64 // the promoter's wall clock, moved on by the suspension
	release := make(chan struct{})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	defer free()
	var readsAfter atomic.Int32
	// Long enough that the sweep below is over well before the hedge's
	// timer, at a third of it, sends the commit again.
	const timeout = 4500 * time.Millisecond
	b := f.open(func(cfg *Config) {
		cfg.RequestTimeout = timeout
		cfg.Now = func() time.Time {
			// Once suspended, the tries sent again read the clock (each
			// looks at it before it goes out): after both, the first
			// try's member may answer, so that the commit can end.
			if ahead.Load() != 0 && readsAfter.Add(1) >= 2 {
				free()
			}
			return time.Now().Add(time.Duration(ahead.Load()))
		}
	})
	s := store.NewOn(b, store.Options{Bounds: gates.Bounds{TTL: 14 * 24 * time.Hour}})

	reaped := make(chan []string, 1) // what the reap during the suspension swept
	var writes atomic.Int32
	faults.Set(func(p faults.Point) error {
		if p != faults.EtcdWriteBeforeGuess {
			return nil
		}
		if writes.Add(1) != 1 {
			free() // a try sent again reached etcd
			return nil
		}
		// The commit's first try: its member answers nothing, and the
		// host is suspended meanwhile.
		ahead.Store(int64(suspended))
		r, err := f.open().Reap(context.Background(), ReapOptions{Now: func() time.Time { return time.Now().Add(suspended) }})
		if err != nil {
			t.Errorf("the reap during the suspension: %v", err)
		}
		reaped <- r.Swept
		select {
		case <-release:
		case <-time.After(2 * timeout):
		}
		return fmt.Errorf("%w: the member answered nothing (test)", etcdmeta.ErrUnavailable)
	})
	t.Cleanup(func() { faults.Set(nil) })
	res, err := s.Promote(sess, store.PromoteRequest{PiVersion: testJob.PiVersion})
	faults.Set(nil)
	swept := <-reaped
	if len(swept) != 1 || !strings.HasPrefix(swept[0], key+"/0000000000000002-") {
		t.Fatalf("the reap during the suspension swept %v; want the promotion's file, gen 2, and nothing else", swept)
	}
	if res.Promoted {
		got, _ := resolveOn(t, f.s, key)
		t.Fatalf("promoted at gen %d after a suspension past the commit window (%v); the key resolves %s at gen %d, its file swept while the host was suspended", res.Gen, err, got.Reason, got.Gen())
	}
	if res.Reason != gates.PromoteFailed || err == nil || !strings.Contains(err.Error(), "not sent") {
		t.Fatalf("promote = %+v, %v; want promote-failed, the commit not sent", res, err)
	}
	f.holds(key, "a", 1)
}

// The same for migrate --to etcd: its host suspended for two hours while
// the first try of a key's create went unanswered, a reaper sweeping the
// key's file meanwhile (no record names it, and it is past the in-flight
// window), the create's try sent again on resuming must not go out. The
// first try's member stands in by a proxy that takes it and answers
// nothing; the connections made after the suspension (the one a try sent
// again opens) are served. Before: the try landed, the key was reported
// migrated, and it resolved transcript-replaced on the fleet.
func TestAMigrationSuspendedWhileItsCreateWentUnansweredSendsNoTryAgain(t *testing.T) {
	c := etcdtest.Start3(t)
	f := newFixture(t, c)
	key := store.Key("github", "suspended", "migrate")
	root := promotedOnHost(t, key, "a")
	ps := []*etcdtest.Proxy{etcdtest.NewProxy(t, c.Endpoint(0)), etcdtest.NewProxy(t, c.Endpoint(1))}
	const suspended = 2 * time.Hour
	var ahead atomic.Int64
	const timeout = 4500 * time.Millisecond
	b := f.open(func(cfg *Config) {
		cfg.Endpoints, cfg.RequestTimeout = []string{ps[0].URL(), ps[1].URL()}, timeout
		cfg.Now = func() time.Time { return time.Now().Add(time.Duration(ahead.Load())) }
	})
	reaped := make(chan []string, 1)
	faults.Set(func(p faults.Point) error {
		if p != faults.ToEtcdWritten {
			return nil
		}
		sent := ps[0].Requests() + ps[1].Requests()
		for _, p := range ps {
			p.Blackhole()
		}
		go func() {
			// Once the create's first try is sent into the cut, the host
			// is suspended; a reaper sweeps meanwhile; the link is back
			// for the connections made after it.
			for deadline := time.Now().Add(timeout); ps[0].Requests()+ps[1].Requests() == sent; time.Sleep(5 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Errorf("the create's first try never reached a proxy")
					break
				}
			}
			ahead.Store(int64(suspended))
			r, err := f.b.Reap(context.Background(), ReapOptions{Now: func() time.Time { return time.Now().Add(suspended) }})
			if err != nil {
				t.Errorf("the reap during the suspension: %v", err)
			}
			reaped <- r.Swept
			for _, p := range ps {
				p.HealStale()
			}
		}()
		return nil
	})
	t.Cleanup(func() { faults.Set(nil) })
	got, _ := runMigration(t, true, root, b, MigrateOptions{})
	faults.Set(nil)
	swept := <-reaped
	if len(swept) != 1 || !strings.HasPrefix(swept[0], key+"/0000000000000001-") {
		t.Fatalf("the reap during the suspension swept %v; want the key's file and nothing else", swept)
	}
	if r := got[key]; r.Action != migrate.Failed {
		sess, _ := resolveOn(t, f.s, key)
		t.Fatalf("the key = %+v after a suspension past the commit window; it resolves %s on the fleet, its file swept while the host was suspended", r, sess.Reason)
	}
	if st, err := f.b.meta.GetRecord(t.Context(), key); st.Rev != 0 || err != nil {
		t.Fatalf("the key has a record at %d (%v), want none", st.Rev, err)
	}
	if got, _ := runMigration(t, true, root, f.b, MigrateOptions{}); got[key].Action != migrate.Migrated {
		t.Fatalf("re-run: %+v, want migrated", got[key])
	}
	f.holds(key, "a", 1)
}
