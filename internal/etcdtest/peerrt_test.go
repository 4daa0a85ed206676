package etcdtest

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// A closed cluster's members leave no connection between them. The
// leader's GET /version of a follower (its cluster-version monitor's, at
// the first commit of its term and every 4 s) left the follower's side of
// the keep-alive connection inside net/http's finishRequest until the
// peer listener's 5 s read timeout (see stopAll): the cluster's Close
// waited a second for it in the follower's peer Shutdown, and every test
// binary that started a cluster waited up to 5 s for it in Main's leak
// check as it exited. The test sends that request itself, over the
// leader's transport, so that one is in flight whatever the monitor's
// timing. Not Parallel: no other test's cluster starts or stops while it
// looks.
func TestAClosedClusterLeavesNoPeerConnection(t *testing.T) {
	before := goroutineIDs()
	c := Start(t, Options{Members: 3, InProcess: true}) // it reads an embedded member's transport
	leader := c.Leader()
	follower := c.members[(leader+1)%c.Size()]
	rt, ok := peerTransport(c.members[leader].etcd.Server)
	if !ok {
		t.Fatal("the leader has no peer round tripper where closePeerConns looks (etcd's EtcdServer.peerRt renamed or retyped?): it closes nothing, and every test binary waits out those connections as it exits")
	}
	resp, err := (&http.Client{Transport: rt, Timeout: time.Minute}).Get(follower.peerURL.String() + "/version")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	began := time.Now()
	c.Close()
	closed := time.Since(began)
	// Within 3 s, not at the 5 s read timeout: well past what closing
	// them takes (about a second: each peer Shutdown waits its own).
	left := waitLeaksMatching(before, 3*time.Second, "net/http.")
	t.Logf("closed in %v; %d net/http goroutines left %v after the close began", closed.Round(time.Millisecond), len(left), time.Since(began).Round(time.Millisecond))
	if len(left) > 0 {
		t.Errorf("%d goroutines of a net/http connection still run %v after the cluster's Close began:\n\n%s", len(left), time.Since(began).Round(time.Millisecond), strings.Join(left, "\n\n"))
	}
}

// waitLeaksMatching is waitLeaks of the goroutines whose stack holds sub.
func waitLeaksMatching(before map[string]bool, wait time.Duration, sub string) []string {
	deadline := time.Now().Add(wait)
	for {
		var left []string
		for id, stack := range goroutines() {
			if !before[id] && strings.Contains(stack, sub) {
				left = append(left, stack)
			}
		}
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(10 * time.Millisecond)
	}
}
