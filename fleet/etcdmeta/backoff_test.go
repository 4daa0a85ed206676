package etcdmeta

import (
	"context"
	"math"
	"testing"
	"time"

	"sessdb/internal/callerctx"
	"sessdb/internal/etcdtest"
)

// Backoff's pause is 25 ms before the second try, doubling up to 400 ms,
// and 400 ms for every try after, however many: a retry loop within a
// long request timeout (up to MaxRequestTimeout) reaches tries whose
// doubling no longer fits in a Duration. A pause that does not double,
// doubles from a longer start or has no cap leaves a caller with time for
// fewer tries; one that is cut short or wraps to nothing hammers a member
// that did not answer.
func TestBackoffPauseDoublesTo400msAndStaysThere(t *testing.T) {
	cases := []struct {
		try  int
		want time.Duration
	}{
		{math.MinInt, 25 * time.Millisecond},
		{-1, 25 * time.Millisecond},
		{0, 25 * time.Millisecond},
		{1, 50 * time.Millisecond},
		{2, 100 * time.Millisecond},
		{3, 200 * time.Millisecond},
		{4, 400 * time.Millisecond},
		{5, 400 * time.Millisecond},
		{38, 400 * time.Millisecond},
		{39, 400 * time.Millisecond}, // 25 ms << 39 overflows
		{41, 400 * time.Millisecond},
		{58, 400 * time.Millisecond}, // 25 ms << 58 is 0 mod 2^64
		{63, 400 * time.Millisecond},
		{64, 400 * time.Millisecond},
		{math.MaxInt, 400 * time.Millisecond},
	}
	for _, c := range cases {
		if got := backoffPause(c.try); got != c.want {
			t.Errorf("backoffPause(%d) = %v, want %v", c.try, got, c.want)
		}
	}
}

// Backoff waits its pause, no less, and says there is time for another
// try where the caller's deadline lies past it. The deadline is far past
// the pause, so a loaded machine cannot make the answer false; that the
// pause is no longer than it should be is the test above's.
func TestBackoffWaitsItsPause(t *testing.T) {
	etcdtest.Beside(t)
	for try, want := range map[int]time.Duration{0: 25 * time.Millisecond, 3: 200 * time.Millisecond, 58: 400 * time.Millisecond} {
		c, cancel := context.WithTimeout(context.Background(), want+5*time.Second)
		start := time.Now()
		ok := Backoff(c, try)
		took := time.Since(start)
		cancel()
		if !ok || took < want {
			t.Errorf("Backoff(try %d) with %v left = %v after %v; want true after %v", try, want+5*time.Second, ok, took.Round(time.Millisecond), want)
		}
	}
}

// A caller whose context ends is told there is no time for another try:
// at once where it has already ended, and as it ends during the wait,
// not at the wait's end.
func TestBackoffEndsWithTheCallersContext(t *testing.T) {
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	start := time.Now()
	if ok := Backoff(ended, 0); ok {
		t.Errorf("Backoff of an ended context = true, want false")
	}
	c, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if ok := Backoff(c, 4); ok {
		t.Errorf("Backoff(try 4) of a context ending in 20 ms = true, want false")
	}
	if took := time.Since(start); took >= 400*time.Millisecond {
		t.Errorf("Backoff waited %v in all, past the context's end; want it to return as the context ends", took.Round(time.Millisecond))
	}
}

// pastDeadline is a context whose deadline has passed and whose end is
// not signalled yet: what every context with a deadline is between that
// deadline and the run of the timer that ends it, which on a loaded
// machine runs late (a starved test binary, nice 19 beside four busy
// loops: Backoff(try 4) of a context with 20 ms left waited the whole
// 400 ms pause and said there was time for another try, 1 run of 3).
type pastDeadline struct {
	context.Context
	at time.Time
}

func (p pastDeadline) Deadline() (time.Time, bool) { return p.at, true }

// A caller whose deadline has passed has no time for another try, though
// its context's end is not signalled yet: Backoff says so, and does not
// wait its pause first. The context here is never ended, so a Backoff that
// waits for its end, or for the pause, and then reads only ctx.Err(),
// says true.
func TestBackoffPastTheDeadlineIsNoTimeForAnotherTry(t *testing.T) {
	for _, try := range []int{0, 4} {
		c := pastDeadline{context.Background(), time.Now().Add(-time.Millisecond)}
		if Backoff(c, try) {
			t.Errorf("Backoff(try %d) of a context whose deadline has passed, its end not yet signalled = true; want false", try)
		}
	}
	// A deadline within the pause: the wait ends at the deadline, and
	// then there is no time left, whether or not the end is signalled.
	c := pastDeadline{context.Background(), time.Now().Add(20 * time.Millisecond)}
	if Backoff(c, 4) {
		t.Error("Backoff(try 4) of a context whose deadline came during its 400 ms pause, its end not yet signalled = true; want false")
	}
}

// The same for a caller's context the store holds to Go's contract
// (callerctx.Of, whose Deadline reports none so that a request timeout
// gets a timer of its own), and for a request timeout made from it: the
// caller's deadline, passed and not yet signalled, leaves no time for
// another try. Before, Backoff saw only the request timeout's deadline an
// hour off, waited its whole pause and said true.
func TestBackoffPastTheCallersDeadlineIsNoTimeForAnotherTry(t *testing.T) {
	for _, try := range []int{0, 4} {
		held := callerctx.Of(pastDeadline{context.Background(), time.Now().Add(-time.Millisecond)})
		req, cancel := context.WithTimeout(held, time.Hour)
		start := time.Now()
		for what, c := range map[string]context.Context{"the caller's context": held, "a request timeout made from it": req} {
			if Backoff(c, try) {
				t.Errorf("Backoff(try %d) of %s, the caller's deadline passed = true; want false", try, what)
			}
		}
		cancel()
		if took := time.Since(start); took >= 25*time.Millisecond {
			t.Errorf("Backoff(try %d) waited %v past the caller's deadline", try, took.Round(time.Millisecond))
		}
	}
}
