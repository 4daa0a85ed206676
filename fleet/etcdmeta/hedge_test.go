package etcdmeta

import (
	"context"
	"errors"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// hedgeStore is a Store of three endpoints that Hedge alone uses: no
// connection, only the request timeout whose thirds pace the tries.
func hedgeStore() *Store {
	return &Store{cfg: settings{Config: Config{Endpoints: []string{"a:1", "b:1", "c:1"}, RequestTimeout: 300 * time.Millisecond}}}
}

// hedge runs Hedge in a goroutine so that a Hedge that never answers
// fails the test instead of hanging it.
func hedge(t *testing.T, try func(context.Context) (int, error), ends func(error) bool, again func()) (int, error) {
	t.Helper()
	type answer struct {
		r   int
		err error
	}
	done := make(chan answer, 1)
	go func() {
		r, err := Hedge(hedgeStore(), context.Background(), try, ends, again)
		done <- answer{r, err}
	}()
	select {
	case a := <-done:
		return a.r, a.err
	case <-time.After(time.Minute):
		t.Fatal("Hedge did not answer")
		return 0, nil
	}
}

// A try that fails, none other in flight, is the answer: Hedge does not
// send again what has already failed.
func TestHedgeAnswersTheLastErrorOnceNoTryIsInFlight(t *testing.T) {
	errDown := errors.New("down")
	var tries atomic.Int32
	_, err := hedge(t, func(context.Context) (int, error) {
		tries.Add(1)
		return 0, errDown
	}, func(error) bool { return false }, nil)
	if !errors.Is(err, errDown) || tries.Load() != 1 {
		t.Fatalf("Hedge = %v after %d tries, want %v after 1", err, tries.Load(), errDown)
	}
}

// A member that answers nothing is sent around: the first try hangs, the
// second fails with an error that does not end the hedge, the third
// succeeds. The answer is the success; again ran before each try sent
// again; the hung try is cancelled once Hedge returns.
func TestHedgeAnswersTheFirstSuccessPastAFailureAndAStall(t *testing.T) {
	var n, agains atomic.Int32
	stalled := make(chan error, 1)
	r, err := hedge(t, func(c context.Context) (int, error) {
		switch n.Add(1) {
		case 1:
			<-c.Done()
			stalled <- c.Err()
			return 0, c.Err()
		case 2:
			return 0, errors.New("refused")
		default:
			return 3, nil
		}
	}, func(error) bool { return false }, func() { agains.Add(1) })
	if err != nil || r != 3 {
		t.Fatalf("Hedge = %d, %v; want the third try's 3, nil", r, err)
	}
	if got := agains.Load(); got != 2 {
		t.Fatalf("again ran %d times, want 2 (before each of the two tries sent again)", got)
	}
	select {
	case err := <-stalled:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("the stalled try ended with %v, want context.Canceled", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the stalled try was not cancelled")
	}
}

// An error for which ends is true is the answer at once, though a try is
// still in flight.
func TestHedgeAnswersAnEndingErrorAtOnce(t *testing.T) {
	errConflict := errors.New("conflict")
	var n atomic.Int32
	_, err := hedge(t, func(c context.Context) (int, error) {
		if n.Add(1) == 1 {
			<-c.Done()
			return 0, c.Err()
		}
		return 0, errConflict
	}, func(err error) bool { return errors.Is(err, errConflict) }, nil)
	if !errors.Is(err, errConflict) {
		t.Fatalf("Hedge = %v, want %v", err, errConflict)
	}
}

// The two tries a request sends again go to two different endpoints, at
// every turn of the Store: past 2^31 and at the wrap of 2^32 too, where a
// turn taken as a signed 32-bit int would be a negative index (a panic
// on a 32-bit host, after some two billion hedged requests).
func TestHedgeSendsItsTwoTriesAgainToTwoEndpointsAtEveryTurn(t *testing.T) {
	s := hedgeStore()
	s.cfg.RequestTimeout = 30 * time.Millisecond
	for _, turn := range []uint32{0, 1, 2, 1<<31 - 2, 1<<31 - 1, 1 << 31, math.MaxUint32 - 2, math.MaxUint32 - 1, math.MaxUint32} {
		s.turn.Store(turn)
		got := triesOfOneRequest(t, s)
		var ks []int
		for _, p := range got {
			if k, ok := p.(int); ok {
				ks = append(ks, k)
			}
		}
		if len(got) != 3 || len(ks) != 2 || ks[0] == ks[1] || min(ks[0], ks[1]) < 0 || max(ks[0], ks[1]) >= len(s.cfg.Endpoints) {
			t.Errorf("turn %d: the tries went to %v; want the first unpinned and two different endpoints of %d", turn, got, len(s.cfg.Endpoints))
		}
	}
}

// The turn moves on by one each hedged request: of three requests in a
// row, each sends its first try again to another endpoint, so that a
// silent member meets that try of one request in three, not of each.
func TestHedgedRequestsInARowSendTheirTriesAgainToEachEndpointInTurn(t *testing.T) {
	s := hedgeStore()
	s.cfg.RequestTimeout = 30 * time.Millisecond
	seen := map[any]int{}
	var order []any
	for range len(s.cfg.Endpoints) {
		tries := triesOfOneRequest(t, s)
		if len(tries) != 3 {
			t.Fatalf("a request's tries went to %v; want three", tries)
		}
		seen[tries[1]]++
		order = append(order, tries[1])
	}
	if len(seen) != len(s.cfg.Endpoints) {
		t.Errorf("%d requests in a row sent their first try again to %v; want each endpoint once", len(s.cfg.Endpoints), order)
	}
}

// triesOfOneRequest runs one hedged request on s whose tries are let run
// until the third is sent, however late a loaded machine sends it (a
// deadline of three thirds of the timeout let a starved ticker send only
// two: 5 of 20 runs failed under load, "the tries went to [<nil> 0]",
// which is the machine's speed, not where tries go), and returns where
// each went in the order sent: nil for the client's turn, the index of
// the endpoint a try sent again was pinned to.
func triesOfOneRequest(t *testing.T, s *Store) []any {
	t.Helper()
	var mu sync.Mutex
	var pins []any
	c, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		Hedge(s, c, func(c context.Context) (int, error) {
			mu.Lock()
			pins = append(pins, c.Value(pinKey{}))
			if len(pins) == 3 {
				cancel() // every try is sent: all end, and Hedge with them
			}
			mu.Unlock()
			<-c.Done()
			return 0, c.Err()
		}, func(error) bool { return false }, nil)
	}()
	select {
	case <-done:
	case <-time.After(time.Minute):
		cancel()
		<-done
		t.Fatalf("Hedge sent no third try within a minute (a tick every %v); the tries went to %v", s.cfg.RequestTimeout/3, pins)
	}
	mu.Lock()
	defer mu.Unlock()
	return slices.Clone(pins)
}
