package fleet

import (
	"sync/atomic"
	"testing"
	"time"

	"sessdb/gates"
	"sessdb/internal/etcdtest"
	"sessdb/internal/faults"
	"sessdb/store"
)

// A commit whose try stalls inside the write past the window (after the
// wall clock was looked at, before the transaction is sent: a host
// starved, a GC pause) sends nothing once the window has passed: the
// commit's context ends at the window on the monotonic clock, whatever
// the request timeout left. Before (mutant T30 of mutfleet46's sweep: the
// window's deadline moved 1000 windows on), the stalled try was sent
// after the window and landed, naming a file a reaper may have swept.
func TestACommitStalledInsideItsTryPastTheWindowSendsNothing(t *testing.T) {
	f := newFixture(t, etcdtest.Start1(t))
	key := store.Key("github", "in-flight", "stalled inside its try")
	f.run(key, "a")
	sess, _ := f.job(key, "b")
	defer func(w time.Duration) { commitWindow = w }(commitWindow)
	commitWindow = 200 * time.Millisecond
	var stalled atomic.Bool
	faults.Set(func(p faults.Point) error {
		if p == faults.EtcdWriteAfterGuess && stalled.CompareAndSwap(false, true) {
			time.Sleep(2 * commitWindow)
		}
		return nil
	})
	t.Cleanup(func() { faults.Set(nil) })
	res, err := f.promote(sess)
	faults.Set(nil)
	if !stalled.Load() {
		t.Fatal("the commit's try never reached the stall")
	}
	if err == nil || res.Promoted || res.Reason != gates.PromoteFailed {
		t.Fatalf("a commit stalled inside its try past the window = %+v, %v; want promote-failed", res, err)
	}
	f.holds(key, "a", 1)
}
