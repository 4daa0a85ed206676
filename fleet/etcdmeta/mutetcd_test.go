package etcdmeta

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"sessdb/internal/etcdtest"
)

// Tests of promises a mutation sweep of the package's newer code
// (mutetcd) found no test holding.

// A renumber on base 0 is refused, even where the key has no record and
// so its base matches: a history without a record is no key sessdb
// wrote (an operator's etcdctl, another binary), and a repair must not
// number it again as if it were one. A *ConflictError; nothing written.
func TestRenumberHistoryOfAHistoryWithoutARecordWritesNothing(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	s := open(t, c)
	cli := c.Client(t)
	key := newKey()
	v, err := encodeHistory(entry(1, randHex(16)))
	if err != nil {
		t.Fatal(err)
	}
	top := s.historyKey(key, math.MaxUint64-1)
	if _, err := cli.Put(ctx(t), top, string(v)); err != nil {
		t.Fatal(err)
	}
	did, err := s.RenumberHistory(ctx(t), key, 0)
	var ce *ConflictError
	if !errors.As(err, &ce) || did != (Renumbered{}) {
		t.Errorf("RenumberHistory on base 0 of a history without a record = %+v, %v; want a conflict", did, err)
	}
	got, err := cli.Get(ctx(t), s.historyDir(key), clientPrefix()...)
	if err != nil {
		t.Fatal(err)
	}
	if at, err := cli.Get(ctx(t), top); err != nil || got.Count != 1 || len(at.Kvs) != 1 {
		t.Errorf("after: %d history keys, the entry in the last slot %v (%v); want it alone, as it was", got.Count, at.Kvs, err)
	}
}

// A renumber on a base the key has moved from is a *ConflictError naming
// the revision it holds, wherever its newest entry is: the caller's view
// of the key is stale, and check --repair says the key changed while it
// was repaired (run check again), not that it found nothing to do.
func TestRenumberHistoryOnAMovedBaseIsAConflictAnywhere(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	s := open(t, c)
	key := newKey()
	old := mustPut(t, s, key, 0, 1)
	rev := mustPut(t, s, key, old, 2)
	did, err := s.RenumberHistory(ctx(t), key, old)
	var ce *ConflictError
	if !errors.As(err, &ce) || ce.Current.Rev != rev || did != (Renumbered{}) {
		t.Errorf("RenumberHistory on a moved base = %+v, %v; want a conflict naming revision %d", did, err, rev)
	}
}

// The rest of classify's table, each row a kind of answer etcd or gRPC
// gives that TestClassify does not name: every credential refusal is
// ErrAuth (a wrong password is no outage to wait out), every "did not
// answer" is ErrUnavailable (a write that may have landed, to retry),
// and a cancellation that is not the caller's own (the client's, its
// connection closed under the request) is no interrupt of the caller.
func TestClassifyEveryKindOfAnswer(t *testing.T) {
	bg := context.Background()
	for _, tc := range []struct {
		err  error
		want error
	}{
		{context.Canceled, ErrUnavailable},
		{fmt.Errorf("x: %w", context.Canceled), ErrUnavailable},
		{status.Error(codes.Aborted, "aborted"), ErrUnavailable},
		{status.Error(codes.Canceled, "the client connection is closing"), ErrUnavailable},
		{status.Error(codes.Unknown, "server stopped"), ErrUnavailable},
		{status.Error(codes.Unknown, "transport is closing"), ErrUnavailable},
		{rpctypes.ErrAuthOldRevision, ErrAuth},
		{rpctypes.ErrUserEmpty, ErrAuth},
		{rpctypes.ErrUserNotFound, ErrAuth},
		{status.Error(codes.Unauthenticated, "x"), ErrAuth},
		{status.Error(codes.PermissionDenied, "x"), ErrAuth},
		{errors.New("remote error: tls: certificate required"), ErrAuth},
		{errors.New("remote error: tls: bad certificate"), ErrAuth},
		{status.Error(codes.ResourceExhausted, "grpc: received message larger than max"), ErrTooLarge},
	} {
		if got := classify(bg, tc.err); got != tc.want {
			t.Errorf("classify(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
	// Under a ctx its caller has cancelled, only the cancellation is the
	// caller's: an answer etcd gave meanwhile keeps its kind.
	cancelled, cancel := context.WithCancel(bg)
	cancel()
	for _, tc := range []struct {
		err  error
		want error
	}{
		{rpctypes.ErrAuthFailed, ErrAuth},
		{rpctypes.ErrNoLeader, ErrUnavailable},
		{rpctypes.ErrRequestTooLarge, ErrTooLarge},
	} {
		if got := classify(cancelled, tc.err); got != tc.want {
			t.Errorf("classify(%v) under a cancelled ctx = %v, want %v", tc.err, got, tc.want)
		}
	}
}

// Only an answer that is etcd's silence is read as the caller's deadline
// when that deadline has passed: a refusal (wrong credentials) or an
// answer of no kind, met as the deadline ends, is that answer alone, or
// package fleet's walks took it for their caller's end and stopped
// quietly, where the refusal is what the operator must hear.
func TestAnAnswerAtTheCallersDeadlineIsNotTheDeadline(t *testing.T) {
	ended, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	for _, tc := range []struct {
		err  error
		want error
	}{
		{rpctypes.ErrAuthFailed, ErrAuth},
		{rpctypes.ErrCompacted, rpctypes.ErrCompacted},
	} {
		err := opErr(ended, "get", "k", tc.err)
		if !errors.Is(err, tc.want) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrUnavailable) {
			t.Errorf("opErr(%v) under the caller's ended deadline = %v; want %v, not the deadline", tc.err, err, tc.want)
		}
	}
}
