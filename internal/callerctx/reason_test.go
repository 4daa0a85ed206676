package callerctx

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// errShutdown is a caller's own reason for a stop.
var errShutdown = errors.New("the server is shutting down")

// reasonCtx is a caller's context that ends with a reason of its own, as
// one of the caller's type (or whose Err returns context.Cause) may.
type reasonCtx struct {
	context.Context
	done chan struct{}
}

func (c reasonCtx) Done() <-chan struct{} { return c.done }
func (c reasonCtx) Err() error {
	select {
	case <-c.done:
		return errShutdown
	default:
		return nil
	}
}

// A caller's Err that is neither context.Canceled nor
// context.DeadlineExceeded was passed on as it was: code that tells a
// stop by errors.Is(err, context.Canceled) (gRPC's status, etcdmeta's
// opErr) took it for a failure of its own. Any non-nil Err is a stop now:
// it wraps context.Canceled and the caller's reason, and stays the same
// error; a Canceled or DeadlineExceeded stays as it is.
func TestAnErrOfTheCallersOwnIsAStop(t *testing.T) {
	c := reasonCtx{Context: context.Background(), done: make(chan struct{})}
	held := Of(c)
	if err := held.Err(); err != nil {
		t.Fatalf("Err before the stop: %v", err)
	}
	close(c.done)
	err := held.Err()
	if !errors.Is(err, context.Canceled) || !errors.Is(err, errShutdown) || held.Err() != err {
		t.Fatalf("Err after a stop of the caller's own reason: %v; want one error wrapping context.Canceled and the reason", err)
	}
	for _, want := range []error{context.Canceled, context.DeadlineExceeded} {
		ctx, cancel := context.WithCancelCause(context.Background())
		cancel(want)
		if got := Of(ctx).Err(); got != context.Canceled {
			t.Errorf("Err of a context cancelled with cause %v: %v; want context.Canceled as it is", want, got)
		}
	}
	ctx, cancel := context.WithDeadline(context.Background(), time.Time{})
	defer cancel()
	if got := Of(ctx).Err(); got != context.DeadlineExceeded {
		t.Errorf("Err of a context past its deadline: %v; want context.DeadlineExceeded as it is", got)
	}
}

// A caller's own reason that wraps context.DeadlineExceeded (its budget
// spent, say), but is not it, was passed on as it was: gRPC answers a
// context error it does not know as code Unknown with its text, and
// etcdmeta took "context deadline exceeded" for etcd 3.4's own timeout,
// the caller's stop for etcd unavailable. It is a stop now, as any
// reason of the caller's own: it wraps context.Canceled too, the
// deadline and the reason still, and stays the same error.
func TestAReasonThatWrapsTheDeadlineIsAStop(t *testing.T) {
	reason := fmt.Errorf("the caller's budget spent: %w", context.DeadlineExceeded)
	c := reasonCtx{Context: context.Background(), done: make(chan struct{})}
	held := Of(wrappedReasonCtx{c, reason})
	close(c.done)
	err := held.Err()
	if !errors.Is(err, context.Canceled) || !errors.Is(err, reason) || !errors.Is(err, context.DeadlineExceeded) || held.Err() != err {
		t.Fatalf("Err after a stop whose reason wraps the deadline: %v; want one error wrapping context.Canceled and the reason", err)
	}
	// One that wraps context.Canceled already is a stop as it is.
	cancelled := fmt.Errorf("shutting down: %w", context.Canceled)
	if got := Of(wrappedReasonCtx{c, cancelled}).Err(); got != cancelled {
		t.Errorf("Err of a reason that wraps context.Canceled: %v; want it as it is", got)
	}
}

// wrappedReasonCtx is reasonCtx ending with reason.
type wrappedReasonCtx struct {
	reasonCtx
	reason error
}

func (c wrappedReasonCtx) Err() error {
	if c.reasonCtx.Err() != nil {
		return c.reason
	}
	return nil
}
