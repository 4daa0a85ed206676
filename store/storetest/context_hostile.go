package storetest

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"sessdb/db"
	"sessdb/gates"
	"sessdb/store"
)

// errOnly is a Context whose Err is err and whose Done is nil: a custom
// Context that says it is done but has no channel to say so.
type errOnly struct {
	context.Context
	err error
}

func (c errOnly) Done() <-chan struct{} { return nil }
func (c errOnly) Err() error            { return c.err }

// lookCount is a Context whose Err is nil for its first n looks and
// context.Canceled from then on, and whose Done is never closed: a cancel
// at a chosen look, which only a look at Err can see.
type lookCount struct {
	context.Context
	n    atomic.Int64
	done chan struct{}
}

func newLookCount(n int64) *lookCount {
	c := &lookCount{Context: context.Background(), done: make(chan struct{})}
	c.n.Store(n)
	return c
}

func (c *lookCount) Done() <-chan struct{} { return c.done }

func (c *lookCount) Err() error {
	if c.n.Add(-1) < 0 {
		return context.Canceled
	}
	return nil
}

// Contexts a caller's code may hand over: one whose deadline passed
// before the call, one whose Err says done with no Done channel, one that
// ends at each look at it in turn, where no channel tells it.
var hostileContextPromise = promise{"context/a deadline past, an Err with no Done, a cancel at each look: given up or whole, never half", func(e *env) {
	e.run(key, "first")
	sess, jobDir, data := e.job(key, "job")
	run := turn(data, "second", 100)
	e.stage(jobDir, run)
	before, beforeH := e.record(key)
	was := e.jobDirState(jobDir)
	past, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Hour))
	defer cancel()
	for _, c := range []struct {
		name string
		ctx  context.Context
		want error
	}{
		{"a deadline already past", past, context.DeadlineExceeded},
		{"an Err with no Done", errOnly{context.Background(), context.Canceled}, context.Canceled},
	} {
		fresh := filepath.Join(e.t.TempDir(), "job")
		if got, err := e.s.ResolveContext(c.ctx, key, localJob(), fresh); !errors.Is(err, c.want) {
			e.fatalf("%s: ResolveContext = %s, %v; want %v", c.name, describe(got), err, c.want)
		}
		if _, err := os.Lstat(fresh); !errors.Is(err, os.ErrNotExist) {
			e.fatalf("%s: the resolve made its job dir: %v", c.name, err)
		}
		res, err := e.s.PromoteContext(c.ctx, sess, store.PromoteRequest{PiVersion: piVersion})
		if !errors.Is(err, c.want) || res.Promoted || res.Reason != gates.PromoteFailed {
			e.fatalf("%s: PromoteContext = %+v, %v; want promote-failed, %v", c.name, res, err, c.want)
		}
		if now := e.jobDirState(jobDir); !bytes.Equal(now.staged, was.staged) || !bytes.Equal(now.ticket, was.ticket) {
			e.fatalf("%s: the job dir changed", c.name)
		}
		e.unchanged(key, before, beforeH, c.name)
	}

	// A cancel at each look in turn: a resolve is a whole Session with its
	// ticket, or the cancel with neither ticket nor staged file.
	for n := int64(1); ; n++ {
		jd := e.t.TempDir()
		got, err := e.s.ResolveContext(newLookCount(n), key, localJob(), jd)
		if err == nil {
			e.want(got, true, gates.Resumed)
			if t, terr := store.ReadTicket(jd); terr != nil || t.Ticket != got.Ticket {
				e.fatalf("cancelled at look %d: a resolve returned whole left the ticket %+v, %v", n, t, terr)
			}
			break
		}
		if !errors.Is(err, context.Canceled) || n > 100 {
			e.fatalf("cancelled at look %d: ResolveContext = %s, %v; want context.Canceled", n, describe(got), err)
		}
		if now := e.jobDirState(jd); now.staged != nil || now.ticket != nil {
			e.fatalf("cancelled at look %d: a resolve given up left a staged file (%v) or a ticket (%v)", n, now.staged != nil, now.ticket != nil)
		}
		e.unchanged(key, before, beforeH, "a resolve given up")
	}
	// A promote is promoted whole, or promote-failed with the cancel, the
	// key and the run as they were.
	e.promoteGivenUpAtEachLook("cancelled", func(n int64) context.Context { return newLookCount(n) }, sess, jobDir, was, before, beforeH)
	again, jd := e.resolve(key, localJob())
	if e.want(again, true, gates.Resumed); !bytes.Equal(e.staged(jd), run) {
		e.fatalf("the key resumes %d bytes, not the run's %d", len(e.staged(jd)), len(run))
	}
}}

// promoteGivenUpAtEachLook promotes sess, staged in jobDir (was), with
// the context ctxAt(n) gives for n = 1, 2, ... (one that gives the call up
// at its n-th look at it, as what says), until a promote is whole: each
// before it is promote-failed with context.Canceled, no panic let out,
// the run in the job dir and the key (before, beforeH) as they were; the
// whole one is promoted at gen 2.
func (e *env) promoteGivenUpAtEachLook(what string, ctxAt func(n int64) context.Context, sess store.Session, jobDir string, was jobDirState, before db.Sidecars, beforeH []db.HistoryEntry) {
	for n := int64(1); ; n++ {
		var res store.PromoteResult
		var err error
		if p := guard(func() { res, err = e.s.PromoteContext(ctxAt(n), sess, store.PromoteRequest{PiVersion: piVersion}) }); p != nil {
			e.fatalf("%s at look %d: the promote let a panic out: %v", what, n, p)
		}
		if err == nil {
			if !res.Promoted || res.Gen != 2 || res.Repeat {
				e.fatalf("%s at look %d: PromoteContext = %+v; want promoted gen 2", what, n, res)
			}
			return
		}
		if !errors.Is(err, context.Canceled) || res.Promoted || res.Reason != gates.PromoteFailed || n > 100 {
			e.fatalf("%s at look %d: PromoteContext = %+v, %v; want promote-failed, context.Canceled", what, n, res, err)
		}
		if now := e.jobDirState(jobDir); !bytes.Equal(now.staged, was.staged) {
			e.fatalf("%s at look %d: the run in the job dir changed", what, n)
		}
		e.unchanged(sess.Key, before, beforeH, what+": a promote given up")
	}
}

// guard calls f and returns the panic it let out, nil when none.
func guard(f func()) (p any) {
	defer func() { p = recover() }()
	f()
	return nil
}
