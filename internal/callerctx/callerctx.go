// Package callerctx holds a caller's context to Go's contract where the
// caller's own Context type breaks it, so that nothing the store does with
// it can panic, spin or hang.
//
// context.Context is an interface a caller's code may implement. One whose
// Done is closed while its Err is still nil makes the standard library
// panic ("context: internal error: missing cancel error") in
// context.WithTimeout, or in the goroutine it starts to watch the parent,
// where no caller can recover it; a wait that ends on Done and asks Err
// why finds no reason and waits again, until its own timeout. One whose
// Deadline names a time its Done does not keep makes context.WithTimeout
// trust that deadline instead of setting its own timer, so a request
// bound meant to end an etcd call that gets no answer never ends it. And
// one whose methods panic leaves whatever the store held at that moment
// (an in-process lock table's mutex, a waiting writer counted) held for
// every later call of a caller that recovers the panic (net/http's server
// does).
package callerctx

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Of returns ctx held to the contract: nil and context.Background() are
// context.Background() (never done); a context Of made is itself; any
// other is wrapped so that
//
//   - Err is never nil once Done is closed: a Done closed while the
//     caller's Err is nil is context.Canceled;
//   - Err, where the caller's is neither context.Canceled nor
//     context.DeadlineExceeded (nor wraps context.Canceled), is an error
//     that wraps both the caller's and context.Canceled: any non-nil Err
//     is a stop;
//   - Err, once non-nil, stays the same error (the contract's "successive
//     calls return the same error"), whatever the caller's Err says later;
//   - Deadline reports none: the caller's Done and Err still end the
//     call at its deadline, but no bound of the store's own (a request
//     timeout made with context.WithTimeout) is skipped on the word of a
//     deadline that Done may never keep;
//   - a panic in the caller's Err or Done is taken as the call given up:
//     Err is then an error that wraps context.Canceled and says the panic,
//     Done a closed channel; a panic in Value is a nil value. The caller's
//     bug is reported as an error, where the store can still release what
//     it holds, rather than wherever the store happened to look.
func Of(ctx context.Context) context.Context {
	switch c := ctx.(type) {
	case nil:
		return context.Background()
	case *held:
		return c
	}
	if ctx == context.Background() {
		return ctx
	}
	return &held{caller: ctx}
}

// held is a caller's context held to the contract (see Of).
type held struct {
	caller context.Context

	mu  sync.Mutex
	err error // the first non-nil Err, returned from then on
}

// closed is a channel closed once, for a Done that panicked.
var closed = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// Deadline reports none (see Of).
func (c *held) Deadline() (time.Time, bool) { return time.Time{}, false }

// Done is the caller's Done, or a closed channel where it panicked.
func (c *held) Done() <-chan struct{} {
	d, err := c.done()
	if err != nil {
		c.settle(err)
		return closed
	}
	return d
}

// Err is the caller's Err, context.Canceled where Done is closed and that
// is nil, and the first non-nil answer from then on.
func (c *held) Err() error {
	c.mu.Lock()
	err := c.err
	c.mu.Unlock()
	if err != nil {
		return err
	}
	err = c.ask()
	if err == nil {
		return nil
	}
	return c.settle(err)
}

// ask is the caller's Err, context.Canceled for a Done closed with a nil
// Err, a panic of either as an error.
func (c *held) ask() (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = panicked("Err", r)
		}
	}()
	if err := c.caller.Err(); err != nil {
		return stop(err)
	}
	d, err := c.done()
	if err != nil {
		return err
	}
	select {
	case <-d: // a nil d never is
		return context.Canceled
	default:
		return nil
	}
}

// done is the caller's Done, a panic of it as an error.
func (c *held) done() (d <-chan struct{}, err error) {
	defer func() {
		if r := recover(); r != nil {
			d, err = nil, panicked("Done", r)
		}
	}()
	return c.caller.Done(), nil
}

// settle keeps err as the answer unless one was kept first, and returns
// the one kept.
func (c *held) settle(err error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil {
		c.err = err
	}
	return c.err
}

// Value is the caller's Value, nil where it panicked; the held context
// itself under heldKey (Deadline).
func (c *held) Value(key any) (v any) {
	if key == (heldKey{}) {
		return c
	}
	defer func() {
		if recover() != nil {
			v = nil
		}
	}()
	return c.caller.Value(key)
}

// heldKey is the Value key under which a held context answers itself.
type heldKey struct{}

// Deadline is ctx's deadline, or the one the caller's context held by Of
// names where ctx is that context or derives from it (a request timeout
// made with context.WithTimeout) and not through WithoutCancel, whichever
// comes first. Of's Deadline
// reports none, so that context.WithTimeout sets its own timer rather
// than trust the caller's; a wait that only shortens itself by a
// deadline, never waiting for it to be kept (a backoff's pause, ended
// there with no time for another try), reads the caller's here. A panic
// in the caller's Deadline is none.
//
// A held context's caller may itself derive from one Of held (a
// package's entry holds what another package's entry held and bounded:
// the fleet's request timeout given to etcdmeta): its deadline is read
// through it the same way, so the first caller's is still found.
func Deadline(ctx context.Context) (time.Time, bool) {
	return deadlineWithin(ctx, maxHeld)
}

// maxHeld bounds how many held contexts Deadline reads through, one
// inside another: a caller's Value that leads back to a context derived
// from its own held one (a loop) ends there rather than in a stack
// overflow. The store nests two.
const maxHeld = 8

// deadlineWithin is Deadline, reading through at most n held contexts.
// A caller's context is asked for its Deadline and its Value apart, each
// a panic of its own taken for none: one that panics for a key it does
// not know still has its deadline read.
func deadlineWithin(ctx context.Context, n int) (time.Time, bool) {
	d, ok := deadlineOf(ctx)
	if n == 0 {
		return d, ok
	}
	h := heldIn(ctx)
	if h == nil {
		return d, ok
	}
	if cd, cok := deadlineWithin(h.caller, n-1); cok && (!ok || cd.Before(d)) {
		return cd, true
	}
	return d, ok
}

// deadlineOf is ctx's Deadline, none where it panicked.
func deadlineOf(ctx context.Context) (d time.Time, ok bool) {
	defer func() {
		if recover() != nil {
			d, ok = time.Time{}, false
		}
	}()
	return ctx.Deadline()
}

// heldIn is the held context ctx is or derives from (not through
// WithoutCancel), nil where there is none or ctx's Value panicked.
func heldIn(ctx context.Context) (h *held) {
	defer func() {
		if recover() != nil {
			h = nil
		}
	}()
	h, _ = ctx.Value(heldKey{}).(*held)
	return h
}

// Bound is the deadline of ctx where ctx derives from a context Of
// held: the bound the store itself set over it (a request timeout made
// with context.WithTimeout), which a context held again (a package's
// entry holding what another's bounded) hides as it hides every
// caller's. It is never the caller's own deadline, which Of hides on
// purpose (a Deadline that lies bounds nothing); for any other ctx it
// reports none. A step that holds its ctx again and must still tell etcd
// how long it may take (each try of a request, whose grpc-timeout etcd
// bounds its work by) sets this bound again as a timer of its own.
func Bound(ctx context.Context) (time.Time, bool) {
	if heldIn(ctx) == nil {
		return time.Time{}, false
	}
	return deadlineOf(ctx)
}

// WithoutCancel is context.WithoutCancel(ctx), detached from the caller's
// deadline as it is from its end: Deadline does not read the deadline of
// a caller's context held by Of through it. A step the store finishes
// whatever its caller does (a delete or a renumber once sent, within the
// request timeout) would otherwise stop trying an etcd that did not
// answer at the caller's deadline, its answer lost though it may have
// landed. Values still read through it.
func WithoutCancel(ctx context.Context) context.Context {
	return context.WithValue(context.WithoutCancel(ctx), heldKey{}, (*held)(nil))
}

// String names the caller's context, as the standard ones name theirs.
func (c *held) String() string { return fmt.Sprintf("callerctx.Of(%T)", c.caller) }

// stop is err, a caller's non-nil Err: as it is where it is
// context.Canceled or context.DeadlineExceeded, or wraps context.Canceled,
// else an error that wraps both err and context.Canceled. A caller's own
// reason (an error of its type, context.Cause's) is still the caller's
// stop: gRPC, and any code that asks errors.Is(err, context.Canceled),
// would otherwise take a request it cut short for a failure of its own
// (etcd unavailable), not for the caller's stop. One that wraps
// context.DeadlineExceeded but is not it is such a reason too: gRPC
// answers it as code Unknown with its text, which etcdmeta reads as etcd
// 3.4's own timeout ("context deadline exceeded"), etcd unavailable.
func stop(err error) error {
	if err == context.Canceled || err == context.DeadlineExceeded || errors.Is(err, context.Canceled) {
		return err
	}
	return fmt.Errorf("%w (%w)", err, context.Canceled)
}

// panicked is the error of a caller's method that panicked with r.
func panicked(method string, r any) error {
	return fmt.Errorf("%w: the caller's context panicked in %s: %v", context.Canceled, method, r)
}
