package etcdtest

import (
	"strings"
	"testing"
	"time"
)

// The leak check must see a goroutine a test left running, and stop
// seeing it once it ends.
func TestWaitLeaksSeesALeftGoroutine(t *testing.T) {
	before := goroutineIDs()
	stop := make(chan struct{})
	go leakyWorker(stop)
	leaked := waitLeaks(before, 100*time.Millisecond)
	if len(leaked) != 1 || !strings.Contains(leaked[0], "leakyWorker") {
		t.Fatalf("waitLeaks = %q, want the one leaky goroutine", leaked)
	}
	close(stop)
	if leaked := waitLeaks(before, 5*time.Second); len(leaked) != 0 {
		t.Fatalf("waitLeaks after it ended = %q", leaked)
	}
}

func leakyWorker(stop chan struct{}) { <-stop }
