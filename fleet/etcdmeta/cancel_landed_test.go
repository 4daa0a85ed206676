package etcdmeta

import (
	"context"
	"errors"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"sessdb/internal/etcdtest"
)

// A write whose caller cancelled it after it went out may have committed
// as much as one whose answer was lost: Unanswered says so, as its doc
// promises of "a request that got no answer", and the error stays
// context.Canceled alone (ErrUnavailable's doc). A proxy holds the
// answers; a watch on the record cancels the Create once it landed. A Go
// caller that took Unanswered's false for "nothing was written" removed
// the file the landed record names, as a Close does for a write that
// never went out.
func TestAWriteCancelledAfterItLandedIsUnanswered(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	p := etcdtest.NewProxy(t, c.Endpoint(0))
	s := open(t, c, func(cfg *Config) { cfg.Endpoints, cfg.RequestTimeout = []string{p.URL()}, 5*time.Second })
	key := newKey()
	if _, err := s.GetRecord(ctx(t), key); err != nil {
		t.Fatal(err) // the connection through the proxy, made
	}
	wctx, stop := context.WithCancel(ctx(t))
	defer stop()
	w := c.Client(t).Watch(wctx, s.recordKey(key), clientv3.WithCreatedNotify())
	if r := <-w; !r.Created {
		t.Fatalf("the watch: %+v", r)
	}
	put, cancel := context.WithCancel(ctx(t))
	defer cancel()
	go func() {
		for r := range w {
			if len(r.Events) > 0 {
				cancel()
				return
			}
		}
	}()
	p.BlackholeAnswers()
	_, err := s.Create(put, key, record(key, 1), []HistoryEntry{entry(1, randHex(16))})
	p.Heal()
	if got, gerr := s.GetRecord(ctx(t), key); gerr != nil || got.Rev == 0 {
		t.Fatalf("the record after the cancelled Create: %+v, %v; want it landed (else this test proves nothing)", got, gerr)
	}
	if !errors.Is(err, context.Canceled) || errors.Is(err, ErrUnavailable) {
		t.Errorf("Create cancelled once it landed = %v; want context.Canceled alone", err)
	}
	if !Unanswered(err) {
		t.Errorf("Unanswered(%v) = false for a Create that landed, its caller cancelling it before the answer came; want true", err)
	}
}

// A member's answer that came as the caller cancelled (its connection
// closing, a stopping member's text) is the cancel too, and as unanswered
// as the cancel alone: the request had gone out.
func TestAnAnswerOfSilenceUnderTheCallersCancelIsUnanswered(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, answer := range []error{
		status.Error(codes.Unavailable, "transport is closing"),
		status.Error(codes.Unknown, "raft: stopped"),
		context.Canceled,
	} {
		if err := opErr(cancelled, "put", "k", answer); !Unanswered(err) || !errors.Is(err, context.Canceled) {
			t.Errorf("opErr(%v) under a cancelled ctx = %v, Unanswered %v; want context.Canceled, unanswered", answer, err, Unanswered(err))
		}
	}
	// An answer that is no silence is no unanswered request.
	if err := opErr(cancelled, "put", "k", status.Error(codes.PermissionDenied, "etcdserver: permission denied")); Unanswered(err) {
		t.Errorf("opErr(permission denied) under a cancelled ctx = %v: Unanswered; want not", err)
	}
}
