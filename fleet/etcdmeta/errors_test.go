package etcdmeta

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestClassify(t *testing.T) {
	bg := context.Background()
	cancelled, cancel := context.WithCancel(bg)
	cancel()
	for _, tc := range []struct {
		ctx  context.Context
		err  error
		want error
	}{
		{bg, context.DeadlineExceeded, ErrUnavailable},
		{bg, fmt.Errorf("x: %w", context.DeadlineExceeded), ErrUnavailable},
		{cancelled, context.Canceled, nil},
		{bg, rpctypes.ErrNoLeader, ErrUnavailable},
		{bg, rpctypes.ErrLeaderChanged, ErrUnavailable},
		{bg, rpctypes.ErrTimeout, ErrUnavailable},
		{bg, rpctypes.ErrTooManyRequests, ErrUnavailable},
		{bg, status.Error(codes.Unknown, "raft: stopped"), ErrUnavailable},
		// etcd 3.4's answer to a linearizable read its member timed out
		// (cut off from its quorum): before, no sentinel, and a resolve
		// exited 1 where it is store-unavailable.
		{bg, status.Error(codes.Unknown, "context deadline exceeded"), ErrUnavailable},
		{bg, status.Error(codes.Unavailable, "connection refused"), ErrUnavailable},
		{bg, rpctypes.ErrAuthFailed, ErrAuth},
		{bg, rpctypes.ErrPermissionDenied, ErrAuth},
		{bg, rpctypes.ErrInvalidAuthToken, ErrAuth},
		{bg, errors.New("transport: authentication handshake failed: x509: unknown authority"), ErrAuth},
		{bg, rpctypes.ErrNoSpace, nil},
		{bg, rpctypes.ErrRequestTooLarge, ErrTooLarge},
		{bg, status.Error(codes.ResourceExhausted, "trying to send message larger than max (3146574 vs. 2097152)"), ErrTooLarge},
		{bg, rpctypes.ErrCompacted, nil},
		{bg, errors.New("something else"), nil},
	} {
		if got := classify(tc.ctx, tc.err); got != tc.want {
			t.Errorf("classify(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

// An etcd 3.4 member times a read out at the request's own deadline, which
// travels with it (grpc-timeout), and answers "context deadline exceeded"
// with no code: when that deadline was the caller's, the error is the
// caller's deadline as well as ErrUnavailable, as the client's own
// timeout already is (ErrUnavailable's doc), so that package fleet's walks
// return it as ctx's end, not as etcd's silence (fleet's stopped and
// callersEnd ask errors.Is(err, ctx.Err())). Before, it matched
// ErrUnavailable alone. Under a caller's ctx that has not ended, the
// deadline was the request timeout's: etcd unavailable only.
func TestAMembersTimeoutAtTheCallersDeadlineIsTheCallersDeadline(t *testing.T) {
	member := status.Error(codes.Unknown, "context deadline exceeded")
	ended, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	err := opErr(ended, "get", "k", member)
	if !errors.Is(err, ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("under the caller's ended deadline: %v (unavailable %v, deadline %v); want both", err, errors.Is(err, ErrUnavailable), errors.Is(err, context.DeadlineExceeded))
	}
	live, cancel2 := context.WithTimeout(context.Background(), time.Hour)
	defer cancel2()
	err = opErr(live, "get", "k", member)
	if !errors.Is(err, ErrUnavailable) || errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("under a caller's ctx that has not ended: %v; want ErrUnavailable alone", err)
	}
}
