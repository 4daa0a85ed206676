package etcdmeta

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"sessdb/internal/etcdtest"
)

// A read's error that is not its caller's end is the answer at once,
// though another try is still in flight: a member's refusal (the
// credentials, a compacted revision) is what the caller is told, not the
// silence of another member that outlasts it, nor after the caller's
// whole timeout.
func TestAHedgedReadsRefusalIsTheAnswerAtOnce(t *testing.T) {
	errRefused := errors.New("refused")
	c, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var n atomic.Int32
	began := time.Now()
	_, err := hedged(hedgeStore(), c, func(c context.Context) (int, error) {
		if n.Add(1) == 1 {
			<-c.Done() // a silent member
			return 0, c.Err()
		}
		return 0, errRefused
	})
	if took := time.Since(began); !errors.Is(err, errRefused) || took > 2*time.Second {
		t.Fatalf("hedged = %v after %v; want the refusal, at once", err, took)
	}
}

// A request is sent three times at most, however long the tries take:
// once, again at a third of the request timeout and once more at two
// thirds, each to a member in turn (three members need no fourth).
func TestHedgeSendsThreeTriesAtMost(t *testing.T) {
	etcdtest.Beside(t)
	errDown := errors.New("down")
	var tries atomic.Int32
	_, err := hedge(t, func(c context.Context) (int, error) {
		tries.Add(1)
		select {
		case <-c.Done():
		case <-time.After(time.Second): // well past the request timeout (300 ms)
		}
		return 0, errDown
	}, func(error) bool { return false }, nil)
	if !errors.Is(err, errDown) || tries.Load() != 3 {
		t.Fatalf("Hedge = %v after %d tries, want %v after 3", err, tries.Load(), errDown)
	}
}

// The second try goes out at a third of the request timeout: a member
// that answers nothing costs a request a third of its time, not all of
// it, where another member answers at once.
func TestHedgeSendsAgainAtAThirdOfTheTimeout(t *testing.T) {
	etcdtest.Beside(t)
	s := hedgeStore()
	s.cfg.RequestTimeout = 3 * time.Second
	var n atomic.Int32
	began := time.Now()
	r, err := Hedge(s, context.Background(), func(c context.Context) (int, error) {
		if n.Add(1) == 1 {
			<-c.Done() // a silent member
			return 0, c.Err()
		}
		return 2, nil
	}, func(error) bool { return false }, nil)
	took := time.Since(began)
	if err != nil || r != 2 || took >= 2*time.Second {
		t.Fatalf("Hedge = %d, %v after %v with a 3 s timeout; want the second try's 2 at about 1 s", r, err, took)
	}
}
