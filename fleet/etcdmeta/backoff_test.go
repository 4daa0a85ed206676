package etcdmeta

import (
	"context"
	"testing"
	"time"
)

// Backoff waits 25 ms before the second try, doubling up to 400 ms, and
// says there is time for another try where the caller's deadline lies
// past that wait: a retry loop with 150 ms to spare past each pause gets
// every try, and none comes sooner than its pause. A wait that does not
// double, doubles from a longer start or has no cap leaves a caller with
// time for a try none; one that is cut short hammers a member that did
// not answer.
func TestBackoffWaitsTheDoublingPauseAndNoMore(t *testing.T) {
	for try := range 7 {
		want := min(25*time.Millisecond<<try, 400*time.Millisecond)
		c, cancel := context.WithTimeout(context.Background(), want+150*time.Millisecond)
		start := time.Now()
		ok := Backoff(c, try)
		took := time.Since(start)
		cancel()
		if !ok || took < want {
			t.Errorf("Backoff(try %d) with %v left = %v after %v; want true after %v", try, want+150*time.Millisecond, ok, took.Round(time.Millisecond), want)
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
