package storetest

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"sessdb/gates"
	"sessdb/store"
)

// doneNoErr is a Context whose Done is done and whose Err is nil, always:
// against Go's contract, which a caller's own Context type can break.
type doneNoErr struct {
	context.Context
	done chan struct{}
}

func (c doneNoErr) Done() <-chan struct{} { return c.done }
func (doneNoErr) Err() error              { return nil }

// closedDoneNoErr is a doneNoErr whose Done is closed already.
func closedDoneNoErr() doneNoErr {
	c := doneNoErr{context.Background(), make(chan struct{})}
	close(c.done)
	return c
}

// Contexts that break Go's contract where a caller's own type can: a Done
// closed while Err is nil is the call given up (context.Canceled), before
// the call and while it waits for the key: never a panic (the standard
// library's context.WithTimeout panics on one), never a wait that goes on
// until the store's own bound.
var doneWithNoErrPromise = promise{"context/a Done closed while Err is nil is a cancel: no crash, no wait, nothing left", func(e *env) {
	e.run(key, "first")
	sess, jobDir, data := e.job(key, "job")
	run := turn(data, "second", 100)
	e.stage(jobDir, run)
	before, beforeH := e.record(key)
	was := e.jobDirState(jobDir)

	// Done before the call: nothing touched.
	fresh := filepath.Join(e.t.TempDir(), "job")
	if got, err := e.s.ResolveContext(closedDoneNoErr(), key, localJob(), fresh); !errors.Is(err, context.Canceled) {
		e.fatalf("ResolveContext with Done closed and a nil Err = %s, %v; want context.Canceled", describe(got), err)
	}
	if _, err := os.Lstat(fresh); !errors.Is(err, os.ErrNotExist) {
		e.fatalf("a resolve with Done closed made its job dir: %v", err)
	}
	res, err := e.s.PromoteContext(closedDoneNoErr(), sess, store.PromoteRequest{PiVersion: piVersion})
	if !errors.Is(err, context.Canceled) || res.Promoted || res.Reason != gates.PromoteFailed {
		e.fatalf("PromoteContext with Done closed and a nil Err = %+v, %v; want promote-failed, context.Canceled", res, err)
	}
	if now := e.jobDirState(jobDir); !bytes.Equal(now.staged, was.staged) || !bytes.Equal(now.ticket, was.ticket) {
		e.fatalf("a promote with Done closed changed the job dir")
	}
	e.unchanged(key, before, beforeH, "a resolve and a promote with Done closed")

	// Done closed while the call waits for the key: given up then.
	s, release := e.stall(key)
	for _, what := range []string{"resolve", "promote"} {
		ctx := doneNoErr{context.Background(), make(chan struct{})}
		time.AfterFunc(stallCancel, func() { close(ctx.done) })
		jd := e.t.TempDir()
		began := time.Now()
		var err error
		if what == "resolve" {
			var got store.Session
			got, err = s.ResolveContext(ctx, key, localJob(), jd)
			if err == nil {
				e.fatalf("a stalled resolve whose Done closed = %s; want context.Canceled", describe(got))
			}
		} else {
			var res store.PromoteResult
			res, err = s.PromoteContext(ctx, sess, store.PromoteRequest{PiVersion: piVersion})
			if res.Promoted || res.Reason != gates.PromoteFailed {
				e.fatalf("a stalled promote whose Done closed = %+v; want promote-failed", res)
			}
		}
		took := time.Since(began)
		if !errors.Is(err, context.Canceled) {
			e.fatalf("a stalled %s whose Done closed with a nil Err = %v; want context.Canceled", what, err)
		}
		if took >= stallWait/4 {
			e.fatalf("the %s gave up %v after the call, its Done closed after %v: the close did not end the wait", what, took, stallCancel)
		}
		if now := e.jobDirState(jd); now.staged != nil || now.ticket != nil {
			e.fatalf("a %s given up left a staged file (%v) or a ticket (%v)", what, now.staged != nil, now.ticket != nil)
		}
	}
	release()
	if now := e.jobDirState(jobDir); !bytes.Equal(now.staged, was.staged) || !bytes.Equal(now.ticket, was.ticket) {
		e.fatalf("a promote given up changed the job dir")
	}
	e.unchanged(key, before, beforeH, "a resolve and a promote given up")
	// The run is still the job's to promote, and the key resumes it.
	if res := e.promote(sess, store.PromoteRequest{PiVersion: piVersion}); !res.Promoted || res.Gen != 2 || res.Repeat {
		e.fatalf("the retry = %+v, want promoted gen 2", res)
	}
	again, jd := e.resolve(key, localJob())
	if e.want(again, true, gates.Resumed); !bytes.Equal(e.staged(jd), run) {
		e.fatalf("the key resumes %d bytes, not the run's %d", len(e.staged(jd)), len(run))
	}
}}

// panicAt is a Context whose Err is nil for its first n looks and panics
// from then on, and whose Done is never closed: a caller's bug at a chosen
// look.
type panicAt struct {
	context.Context
	n    *atomic.Int64
	done chan struct{}
}

func newPanicAt(n int64) panicAt {
	c := panicAt{context.Background(), new(atomic.Int64), make(chan struct{})}
	c.n.Store(n)
	return c
}

func (c panicAt) Done() <-chan struct{} { return c.done }

func (c panicAt) Err() error {
	if c.n.Add(-1) < 0 {
		panic("the caller's Err")
	}
	return nil
}

// donePanics is a Context whose Done panics.
type donePanics struct{ context.Context }

func (donePanics) Done() <-chan struct{} { panic("the caller's Done") }

// lyingDeadline is a Context whose Deadline names a time its Done never
// keeps: never done.
type lyingDeadline struct {
	context.Context
	at   time.Time
	done chan struct{}
}

func (c lyingDeadline) Deadline() (time.Time, bool) { return c.at, true }
func (c lyingDeadline) Done() <-chan struct{}       { return c.done }

// The caller's bugs: a context whose Err or Done panics is the call given
// up (an error that wraps context.Canceled) at whichever look the panic
// comes, never a panic out of the store with the key's lock or a staged
// file left behind; one whose Deadline lies is bounded by the store's own
// waits (LockTimeout, a fleet's request timeout), never by that deadline.
var brokenContextPromise = promise{"context/an Err or Done that panics is a cancel, a Deadline that lies bounds nothing: no crash, no hang", func(e *env) {
	e.run(key, "first")
	sess, jobDir, data := e.job(key, "job")
	run := turn(data, "second", 100)
	e.stage(jobDir, run)
	before, beforeH := e.record(key)
	was := e.jobDirState(jobDir)
	// Done panics before the call: nothing touched.
	fresh := filepath.Join(e.t.TempDir(), "job")
	var err error
	if p := guard(func() { _, err = e.s.ResolveContext(donePanics{context.Background()}, key, localJob(), fresh) }); p != nil || !errors.Is(err, context.Canceled) {
		e.fatalf("ResolveContext with a Done that panics = %v (panic %v); want context.Canceled", err, p)
	}
	if _, err := os.Lstat(fresh); !errors.Is(err, os.ErrNotExist) {
		e.fatalf("a resolve whose Done panics made its job dir: %v", err)
	}
	var res store.PromoteResult
	if p := guard(func() {
		res, err = e.s.PromoteContext(donePanics{context.Background()}, sess, store.PromoteRequest{PiVersion: piVersion})
	}); p != nil || !errors.Is(err, context.Canceled) || res.Reason != gates.PromoteFailed {
		e.fatalf("PromoteContext with a Done that panics = %+v, %v (panic %v); want promote-failed, context.Canceled", res, err, p)
	}
	e.unchanged(key, before, beforeH, "a resolve and a promote whose Done panics")

	// Err panics at each look in turn: a resolve is whole with its ticket,
	// or the cancel with neither ticket nor staged file; the key is never
	// left held (the next call would find it locked).
	for n := int64(1); ; n++ {
		jd := e.t.TempDir()
		var got store.Session
		p := guard(func() { got, err = e.s.ResolveContext(newPanicAt(n), key, localJob(), jd) })
		if p != nil {
			e.fatalf("a resolve whose Err panics at look %d let the panic out: %v", n, p)
		}
		if err == nil {
			e.want(got, true, gates.Resumed)
			break
		}
		if !errors.Is(err, context.Canceled) || n > 100 {
			e.fatalf("Err panics at look %d: ResolveContext = %s, %v; want context.Canceled", n, describe(got), err)
		}
		if now := e.jobDirState(jd); now.staged != nil || now.ticket != nil {
			e.fatalf("Err panics at look %d: a resolve given up left a staged file (%v) or a ticket (%v)", n, now.staged != nil, now.ticket != nil)
		}
	}
	e.unchanged(key, before, beforeH, "resolves whose Err panics")
	e.promoteGivenUpAtEachLook("Err panics", func(n int64) context.Context { return newPanicAt(n) }, sess, jobDir, was, before, beforeH)
	again, jd := e.resolve(key, localJob())
	if e.want(again, true, gates.Resumed); !bytes.Equal(e.staged(jd), run) {
		e.fatalf("the key resumes %d bytes, not the run's %d", len(e.staged(jd)), len(run))
	}

	// A Deadline that lies: the stalled calls end by the stall's own
	// wait, as with no deadline (the standard library's WithTimeout
	// trusts it and sets no timer of its own).
	const wait = 2 * time.Second
	s, release := e.stallFor(key, wait)
	defer release()
	for _, what := range []string{"resolve", "promote"} {
		ctx := lyingDeadline{context.Background(), time.Now().Add(stallCancel), make(chan struct{})}
		jd := e.t.TempDir()
		ended := make(chan error, 1)
		began := time.Now()
		go func() {
			var err error
			if what == "resolve" {
				_, err = s.ResolveContext(ctx, key, localJob(), jd)
			} else {
				_, err = s.PromoteContext(ctx, again, store.PromoteRequest{PiVersion: piVersion})
			}
			ended <- err
		}()
		select {
		case err := <-ended:
			// The stall's own wait ended it (a fleet's request timeout
			// says context.DeadlineExceeded too), not the lie.
			if took := time.Since(began); took < wait/2 {
				e.fatalf("a stalled %s whose Deadline lies ended %v after the call (%v), before the stall's own wait %v", what, took, err, wait)
			}
		case <-time.After(wait + stallWait):
			e.fatalf("a stalled %s whose Deadline lies still waits %v after the call, the stall's own wait %v", what, wait+stallWait, wait)
		}
		if what == "resolve" {
			if now := e.jobDirState(jd); (now.staged == nil) != (now.ticket == nil) {
				e.fatalf("a stalled resolve whose Deadline lies left a staged file (%v) without a ticket, or the other way (%v)", now.staged != nil, now.ticket != nil)
			}
		}
	}
}}
