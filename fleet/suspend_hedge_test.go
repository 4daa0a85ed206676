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

	var swept []string
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
		swept = r.Swept
		select {
		case <-release:
		case <-time.After(2 * timeout):
		}
		return fmt.Errorf("%w: the member answered nothing (test)", etcdmeta.ErrUnavailable)
	})
	t.Cleanup(func() { faults.Set(nil) })
	res, err := s.Promote(sess, store.PromoteRequest{PiVersion: testJob.PiVersion})
	faults.Set(nil)
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
