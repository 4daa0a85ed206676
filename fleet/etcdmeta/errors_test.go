package etcdmeta

import (
	"context"
	"errors"
	"fmt"
	"testing"

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
