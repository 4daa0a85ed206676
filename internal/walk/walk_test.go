package walk

import (
	"context"
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// The pool delivers in index order however the work is scheduled, runs no
// more than its workers at once, and has nothing running when it returns.
func TestOrderedKeepsOrder(t *testing.T) {
	const n, workers = 200, 3
	var running, peak atomic.Int32
	work := func(i int) int {
		if r := running.Add(1); r > peak.Load() {
			peak.Store(r)
		}
		// Later indexes finish first, so order must come from the pool.
		time.Sleep(time.Duration((n-i)%7) * 100 * time.Microsecond)
		running.Add(-1)
		return i
	}
	var got []int
	delivered, err := Ordered(context.Background(), n, workers, work, func(v int) error { got = append(got, v); return nil })
	if err != nil || delivered != n || len(got) != n {
		t.Fatalf("delivered %d (%d values), %v", delivered, len(got), err)
	}
	for i, v := range got {
		if v != i {
			t.Fatalf("result %d delivered at position %d", v, i)
		}
	}
	if p := peak.Load(); p > workers || p < 2 {
		t.Fatalf("peak concurrency %d, want 2..%d", p, workers)
	}
	if r := running.Load(); r != 0 {
		t.Fatalf("%d workers still running after return", r)
	}
}

// An interrupt stops new work, delivers what is contiguous, and says so.
func TestOrderedStopsOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var started atomic.Int32
	work := func(i int) int { started.Add(1); time.Sleep(time.Millisecond); return i }
	var got []int
	delivered, err := Ordered(ctx, 10000, 2, work, func(v int) error {
		got = append(got, v)
		if v == 50 {
			cancel()
		}
		return nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if delivered != len(got) || delivered < 51 || delivered > 51+8*2 {
		t.Fatalf("delivered %d after a cancel at 50 (window 16)", delivered)
	}
	for i, v := range got {
		if v != i {
			t.Fatalf("result %d at position %d", v, i)
		}
	}
	if s := int(started.Load()); s > delivered+16 {
		t.Fatalf("started %d, delivered %d: work went on past the window", s, delivered)
	}
}

func TestOrderedStopsOnDeliverError(t *testing.T) {
	boom := errors.New("boom")
	delivered, err := Ordered(context.Background(), 1000, 4, func(i int) int { return i }, func(v int) error {
		if v == 10 {
			return boom
		}
		return nil
	})
	if err != boom || delivered != 10 {
		t.Fatalf("delivered %d, %v; want 10, boom", delivered, err)
	}
	if n, err := Ordered(context.Background(), 0, 2, func(i int) int { return i }, func(int) error { return nil }); n != 0 || err != nil {
		t.Fatalf("empty walk: %d, %v", n, err)
	}
}

// An entry's error handed to Halt.Stop stops the walk as an interrupt
// does: no entry is started after it, every entry already started is
// delivered (after the stopping one too), and Err gives the error.
func TestHaltDeliversWhatIsUnderWay(t *testing.T) {
	const n, workers = 100, 4
	stopAt := 10
	var started atomic.Int32
	release := make(chan struct{})
	work := func(i int) int {
		started.Add(1)
		if i > stopAt {
			<-release // under way while the stopping entry is delivered
		}
		return i
	}
	boom := errors.New("entry failed")
	ctx, halt := WithHalt(context.Background())
	defer halt.Release()
	var got []int
	delivered, err := Ordered(ctx, n, workers, work, func(i int) error {
		got = append(got, i)
		if i == stopAt {
			// The entries after it are started by the pool, not by this
			// delivery: wait until every worker holds one, or the stop can
			// come before any is under way (1 run in 25 under load).
			for deadline := time.Now().Add(10 * time.Second); started.Load() < int32(stopAt+1+workers); time.Sleep(time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("%d entries started; want every worker under way past entry %d", started.Load(), stopAt)
				}
			}
			err := halt.Stop(boom)
			close(release)
			return err
		}
		return nil
	})
	if !errors.Is(halt.Err(err), boom) {
		t.Fatalf("Err: %v (Ordered's %v); want the stopping entry's", halt.Err(err), err)
	}
	if int(started.Load()) != len(got) || delivered != len(got) {
		t.Errorf("started %d, delivered %d (%d handed); want every started entry delivered", started.Load(), delivered, len(got))
	}
	if len(got) <= stopAt+1 || len(got) == n {
		t.Errorf("delivered %d entries; want those under way after entry %d, and not all %d", len(got), stopAt, n)
	}
	for i, v := range got {
		if v != i {
			t.Fatalf("delivered %v; want index order", got)
		}
	}
	if halt.Err(nil) != boom || (&Halt{}).Err(boom) != boom {
		t.Errorf("Err: want the recorded error, else the one given")
	}
}

// After a deliver error, Ordered returns only once the work already
// started has finished: a caller that then closes what the work uses (a
// store, a key's lock) must not pull it from under a visit (mutation
// sweep: the wait for the workers deleted, Ordered returned while they
// ran; no test held it, as every other test's work had finished by then).
func TestOrderedReturnsAfterTheWorkUnderWay(t *testing.T) {
	var started, finished atomic.Int32
	release := make(chan struct{})
	first := make(chan struct{})
	work := func(i int) int {
		started.Add(1)
		if i > 0 {
			if i == 1 {
				close(first)
			}
			<-release
		}
		finished.Add(1)
		return i
	}
	boom := errors.New("boom")
	delivered, err := Ordered(context.Background(), 100, 2, work, func(v int) error {
		<-first // index 1 is under way
		// Released while Ordered waits: a wait that is missing has
		// returned long before.
		time.AfterFunc(50*time.Millisecond, func() { close(release) })
		return boom
	})
	if s, f := started.Load(), finished.Load(); s != f {
		t.Fatalf("Ordered returned with %d of %d started entries finished", f, s)
	}
	if err != boom || delivered != 0 {
		t.Fatalf("delivered %d, %v; want 0, boom", delivered, err)
	}
}

// A pool of fewer than one worker is one: the walk runs and delivers in
// order (mutation sweep: the floor deleted or lowered, a pool of 0 made
// an empty window and a division by zero; no test passed 0).
func TestOrderedWithNoWorkersRunsOne(t *testing.T) {
	for _, workers := range []int{0, -3} {
		var got []int
		delivered, err := Ordered(context.Background(), 5, workers, func(i int) int { return i }, func(v int) error { got = append(got, v); return nil })
		if err != nil || delivered != 5 || len(got) != 5 || got[0] != 0 || got[4] != 4 {
			t.Fatalf("workers %d: delivered %d %v, %v; want 0..4", workers, delivered, got, err)
		}
	}
}

// A walk that delivered every entry has no error, even if its context
// ended with the last delivery; Workers is w when positive, else the
// cores up to four; Release ends the walk's context (mutation sweep:
// `delivered < n` made `<=`, which reported a cancel after a complete
// walk; Workers's bound changed or its return dropped; Release's cancel
// deleted: no test held them).
func TestOrderedCompleteWorkersAndRelease(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	delivered, err := Ordered(ctx, 3, 2, func(i int) int { return i }, func(v int) error {
		if v == 2 {
			cancel()
		}
		return nil
	})
	if delivered != 3 || err != nil {
		t.Errorf("a complete walk cancelled at its last delivery = %d, %v; want 3, nil", delivered, err)
	}
	cores := min(runtime.GOMAXPROCS(0), 4)
	for w, want := range map[int]int{7: 7, 1: 1, 0: cores, -1: cores} {
		if got := Workers(w); got != want {
			t.Errorf("Workers(%d) = %d, want %d", w, got, want)
		}
	}
	hctx, halt := WithHalt(context.Background())
	halt.Release()
	if hctx.Err() == nil {
		t.Error("Release left the walk's context running")
	}
}

// Stream holds no more than its window of entries between produce and
// deliver, however many produce has, delivers them in order, and returns
// produce's own error once what it gave is delivered.
func TestStreamHoldsAWindowAndReturnsTheProducersError(t *testing.T) {
	const n, workers = 500, 2
	var emitted atomic.Int32
	boom := errors.New("listing lost")
	produce := func(emit func(int) error) error {
		for i := range n {
			if err := emit(i); err != nil {
				return err
			}
			emitted.Add(1)
		}
		return boom
	}
	var got []int
	delivered, err := Stream(context.Background(), workers, produce, func(i int) int { return i }, func(v int) error {
		// Counted after emit returned: at most the window given and not
		// yet delivered, this one among them.
		if held := int(emitted.Load()) - len(got); held > 8*workers {
			t.Fatalf("at entry %d, %d entries given and not delivered; want at most %d", v, held, 8*workers)
		}
		if v != len(got) {
			t.Fatalf("entry %d delivered at position %d", v, len(got))
		}
		got = append(got, v)
		return nil
	})
	if err != boom || delivered != n {
		t.Fatalf("delivered %d, %v; want %d, the producer's error", delivered, err, n)
	}
}

// Stream's emit refuses entries once ctx ends; the walk returns ctx's
// error, whatever produce makes of the refusal.
func TestStreamStopsTheProducerOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	refused := false
	produce := func(emit func(int) error) error {
		for i := 0; ; i++ {
			if err := emit(i); err != nil {
				refused = true
				return errors.New("the listing's own words for it")
			}
		}
	}
	delivered, err := Stream(ctx, 2, produce, func(i int) int { return i }, func(v int) error {
		if v == 20 {
			cancel()
		}
		return nil
	})
	if !errors.Is(err, context.Canceled) || !refused || delivered < 21 || delivered > 21+8*2 {
		t.Fatalf("delivered %d, %v (refused %v); want 21..37, context.Canceled", delivered, err, refused)
	}
}
