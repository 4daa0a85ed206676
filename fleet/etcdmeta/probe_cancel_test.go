package etcdmeta

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"sessdb/internal/etcdtest"
)

// A caller that cancels its request gets context.Canceled alone, at once,
// on a TLS store too: the handshake probe that tells a refusal from
// silence runs only where etcd was unavailable. Here a probe would find
// the member refusing TLS (it serves plain http behind an https://
// endpoint) and turn the caller's own cancellation into ErrAuth, which
// a walk takes for the cluster's answer rather than its own end.
func TestACancelledRequestOnATLSStoreIsTheCancellation(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	var eps []string
	for _, ep := range c.Endpoints() {
		eps = append(eps, strings.Replace(ep, "http://", "https://", 1))
	}
	// A request that waited for an answer would wait out this timeout:
	// long, so that a starved machine's slow return (583 ms, the test
	// binary at nice 19 beside four busy loops) is told from it.
	const timeout = 10 * time.Second
	s, err := Open(Config{Endpoints: eps, RequestTimeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	began := time.Now()
	_, err = s.GetRecord(cancelled, newKey())
	took := time.Since(began)
	if !errors.Is(err, context.Canceled) || errors.Is(err, ErrAuth) || errors.Is(err, ErrUnavailable) {
		t.Fatalf("GetRecord under a cancelled context = %v; want context.Canceled alone", err)
	}
	if took >= timeout/2 {
		t.Errorf("GetRecord under a cancelled context took %v; want it at once, not after the request timeout (%v)", took, timeout)
	}
}
