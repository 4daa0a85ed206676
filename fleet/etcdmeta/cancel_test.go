package etcdmeta

import (
	"context"
	"errors"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// A request the caller cancelled is context.Canceled alone, as
// ErrUnavailable's doc promises, whatever a member answered in the
// meantime: the CLI's walks (dump, check, reap, stats) report a SIGINT as
// interrupted by errors.Is(err, context.Canceled), and an unavailable
// etcd as a failure. Answers that are no silence keep their kind.
func TestACancelledRequestIsTheCancelWhateverTheMemberSaid(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, answer := range []error{
		status.Error(codes.Unavailable, "transport is closing"),
		status.Error(codes.Unknown, "raft: stopped"),
		status.Error(codes.Canceled, "grpc: the client connection is closing"),
		context.DeadlineExceeded,
	} {
		err := opErr(cancelled, "get", "k", answer)
		if !errors.Is(err, context.Canceled) || errors.Is(err, ErrUnavailable) {
			t.Errorf("opErr(%v) under a cancelled ctx = %v; want context.Canceled, not %v", answer, err, ErrUnavailable)
		}
	}
	err := opErr(cancelled, "get", "k", status.Error(codes.PermissionDenied, "etcdserver: permission denied"))
	if !errors.Is(err, ErrAuth) || errors.Is(err, context.Canceled) {
		t.Errorf("opErr(permission denied) under a cancelled ctx = %v; want %v alone", err, ErrAuth)
	}
	// Without a cancel, the same silence is etcd's.
	err = opErr(context.Background(), "get", "k", status.Error(codes.Unavailable, "transport is closing"))
	if !errors.Is(err, ErrUnavailable) || errors.Is(err, context.Canceled) {
		t.Errorf("opErr(transport is closing) = %v; want %v", err, ErrUnavailable)
	}
}
