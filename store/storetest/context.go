package storetest

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"time"

	"sessdb/gates"
	"sessdb/store"
)

// A Staller makes a store whose resolves and promotes of a key wait, as
// for its lock another holder has (a sessions root) or for a metadata
// server that does not answer (a fleet's etcd), for as long as wait before
// they give up on their own: long enough that a call that answers sooner
// was ended by its caller's context.
type Staller interface {
	// Stall returns a store on the instance, with opts, on which a
	// resolve or a promote of key, a key already promoted, waits wait,
	// and release, which ends the stall (the key's lock let go) and is
	// safe to call more than once. errors.ErrUnsupported: the instance
	// cannot stall.
	Stall(key string, opts store.Options, wait time.Duration) (s *store.Store, release func(), err error)
}

// A Committer runs a function once the instance's next promotion has
// begun its commit, and lets the promotion go on: the key-dir store once
// its transaction has committed and before its rename, a fleet as it sends
// its guarded put.
type Committer interface {
	// AtCommit arms f for the next promotion's commit only.
	AtCommit(f func())
}

// A Refuser runs a function once the instance's next promotion has
// decided a refusal, before the refusal's record is written, and lets the
// promotion go on: the key-dir store where the store has decided it,
// under the key's lock; a fleet as its record is about to be sent.
type Refuser interface {
	// AtRefusal arms f for the next refusal only.
	AtRefusal(f func())
}

// stallWait is how long a stalled call waits on its own; stallCancel is
// when the promises' callers give up, and a call that answers before
// stallWait/4 was ended by its caller (a loaded machine's delay is far
// below 5 s, a call that waits for the stall far above).
const (
	stallWait   = 20 * time.Second
	stallCancel = 100 * time.Millisecond
)

// stall returns a stalled store on key, or skips the promise.
func (e *env) stall(key string) (*store.Store, func()) {
	e.t.Helper()
	return e.stallFor(key, stallWait)
}

// stallFor is stall, the stalled calls waiting wait on their own.
func (e *env) stallFor(key string, wait time.Duration) (*store.Store, func()) {
	e.t.Helper()
	st, ok := e.inst.(Staller)
	if !ok {
		e.t.Skip("the instance is no storetest.Staller")
	}
	s, release, err := st.Stall(key, store.Options{Now: e.clock.Now}, wait)
	if errors.Is(err, errors.ErrUnsupported) {
		e.t.Skipf("the instance cannot stall: %v", err)
	}
	if err != nil {
		e.fatalf("stall %s: %v", key, err)
	}
	e.t.Cleanup(release)
	return s, release
}

// jobDirState is what a job dir holds for the promises here: its staged
// file and its ticket, each nil when it is not there.
type jobDirState struct{ staged, ticket []byte }

func (e *env) jobDirState(jobDir string) jobDirState {
	e.t.Helper()
	read := func(p string) []byte {
		b, err := os.ReadFile(p)
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if err != nil {
			e.t.Fatal(err)
		}
		if b == nil {
			b = []byte{} // there, empty: not "not there"
		}
		return b
	}
	return jobDirState{staged: read(stagedPath(jobDir)), ticket: read(filepath.Join(jobDir, store.TicketName))}
}

// A caller's context: a resolve or a promote given up is the caller's
// cancel, never a verdict; a commit begun is never given up.
var contextPromises = []promise{
	{"context/a resolve or promote whose ctx is done before touches nothing", func(e *env) {
		e.run(key, "first")
		before, beforeH := e.record(key)
		// A job dir that an earlier resolve left whole, and the run in it.
		sess, jobDir, data := e.job(key, "job")
		e.stage(jobDir, turn(data, "second", 100))
		was := e.jobDirState(jobDir)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := e.s.ResolveContext(ctx, key, localJob(), jobDir); !errors.Is(err, context.Canceled) {
			e.fatalf("ResolveContext with a done ctx = %v, want context.Canceled", err)
		}
		fresh := filepath.Join(e.t.TempDir(), "job")
		if _, err := e.s.ResolveContext(ctx, key, localJob(), fresh); !errors.Is(err, context.Canceled) {
			e.fatalf("ResolveContext with a done ctx in a new job dir = %v, want context.Canceled", err)
		}
		if _, err := os.Lstat(fresh); !errors.Is(err, os.ErrNotExist) {
			e.fatalf("a resolve with a done ctx made its job dir: %v", err)
		}
		res, err := e.s.PromoteContext(ctx, sess, store.PromoteRequest{PiVersion: piVersion})
		if !errors.Is(err, context.Canceled) || res.Promoted || res.Reason != gates.PromoteFailed {
			e.fatalf("PromoteContext with a done ctx = %+v, %v; want promote-failed, context.Canceled", res, err)
		}
		if now := e.jobDirState(jobDir); !bytes.Equal(now.staged, was.staged) || !bytes.Equal(now.ticket, was.ticket) {
			e.fatalf("the job dir changed: staged %d -> %d bytes, ticket %d -> %d bytes", len(was.staged), len(now.staged), len(was.ticket), len(now.ticket))
		}
		e.unchanged(key, before, beforeH, "a resolve and a promote with a done ctx")
		// The run is still the job's to promote.
		if res := e.promote(sess, store.PromoteRequest{PiVersion: piVersion}); !res.Promoted || res.Gen != 2 {
			e.fatalf("the promote after = %+v, want promoted gen 2", res)
		}
	}},
	{"context/a resolve given up while it waits for the key is its caller's deadline, nothing left", func(e *env) {
		e.run(key, "first")
		before, beforeH := e.record(key)
		// A job dir an earlier resolve filled: its ticket and staged file
		// go too, as after any resolve that fails.
		_, jobDir := e.resolve(key, localJob())
		s, release := e.stall(key)
		ctx, cancel := context.WithTimeout(context.Background(), stallCancel)
		defer cancel()
		began := time.Now()
		sess, err := s.ResolveContext(ctx, key, localJob(), jobDir)
		took := time.Since(began)
		release()
		if !errors.Is(err, context.DeadlineExceeded) {
			e.fatalf("ResolveContext past its deadline = %s, %v; want context.DeadlineExceeded, not a verdict", describe(sess), err)
		}
		if took >= stallWait/4 {
			e.fatalf("the resolve gave up %v after the call, its deadline %v: the deadline did not end the wait", took, stallCancel)
		}
		if now := e.jobDirState(jobDir); now.staged != nil || now.ticket != nil {
			e.fatalf("a resolve given up left a staged file (%v) or a ticket (%v)", now.staged != nil, now.ticket != nil)
		}
		e.unchanged(key, before, beforeH, "a resolve given up")
		again, _ := e.resolve(key, localJob())
		e.want(again, true, gates.Resumed)
	}},
	{"context/a promote given up before its commit keeps the run and changes nothing", func(e *env) {
		e.run(key, "first")
		sess, jobDir, data := e.job(key, "job")
		run := turn(data, "second", 100)
		e.stage(jobDir, run)
		before, beforeH := e.record(key)
		was := e.jobDirState(jobDir)
		s, release := e.stall(key)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		time.AfterFunc(stallCancel, cancel)
		began := time.Now()
		res, err := s.PromoteContext(ctx, sess, store.PromoteRequest{PiVersion: piVersion})
		took := time.Since(began)
		release()
		if !errors.Is(err, context.Canceled) || res.Promoted || res.Reason != gates.PromoteFailed {
			e.fatalf("PromoteContext cancelled = %+v, %v; want promote-failed, context.Canceled", res, err)
		}
		if took >= stallWait/4 {
			e.fatalf("the promote gave up %v after the call, cancelled after %v: the cancel did not end the wait", took, stallCancel)
		}
		if now := e.jobDirState(jobDir); !bytes.Equal(now.staged, was.staged) || !bytes.Equal(now.ticket, was.ticket) {
			e.fatalf("the job dir changed: staged %d -> %d bytes, ticket %d -> %d bytes", len(was.staged), len(now.staged), len(was.ticket), len(now.ticket))
		}
		e.unchanged(key, before, beforeH, "a promote given up")
		// A retry with the same Session promotes the run.
		if res := e.promote(sess, store.PromoteRequest{PiVersion: piVersion}); !res.Promoted || res.Gen != 2 || res.Repeat {
			e.fatalf("the retry = %+v, want promoted gen 2", res)
		}
		again, jd := e.resolve(key, localJob())
		if e.want(again, true, gates.Resumed); !bytes.Equal(e.staged(jd), run) {
			e.fatalf("the key resumes %d bytes, not the run's %d", len(e.staged(jd)), len(run))
		}
	}},
	{"context/a promote given up once its refusal is decided records nothing and keeps the run", func(e *env) {
		rf, ok := e.inst.(Refuser)
		if !ok {
			e.t.Skip("the instance is no storetest.Refuser")
		}
		e.run(key, "first")
		stale, jobDir, data := e.job(key, "stale")
		e.stage(jobDir, turn(data, "stale", 100))
		e.run(key, "second") // the stale job's base moved on: superseded
		before, beforeH := e.record(key)
		was := e.jobDirState(jobDir)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		rf.AtRefusal(cancel)
		res, err := e.s.PromoteContext(ctx, stale, store.PromoteRequest{PiVersion: piVersion})
		if ctx.Err() == nil {
			e.fatalf("the refusal's hook never ran: nothing was cancelled (%+v, %v)", res, err)
		}
		if !errors.Is(err, context.Canceled) || res.Promoted || res.Reason != gates.PromoteFailed {
			e.fatalf("PromoteContext cancelled once its refusal was decided = %+v, %v; want promote-failed, context.Canceled (a refusal is returned once recorded)", res, err)
		}
		if now := e.jobDirState(jobDir); !bytes.Equal(now.staged, was.staged) || !bytes.Equal(now.ticket, was.ticket) {
			e.fatalf("the job dir changed: staged %d -> %d bytes, ticket %d -> %d bytes", len(was.staged), len(now.staged), len(was.ticket), len(now.ticket))
		}
		e.unchanged(key, before, beforeH, "a promote given up before its refusal's record")
		// The retry decides again, and records the refusal once.
		if res := e.promote(stale, store.PromoteRequest{PiVersion: piVersion}); res.Reason != gates.Superseded || res.SupersededBy != 2 {
			e.fatalf("the retry = %+v, want superseded by gen 2", res)
		}
		_, h := e.record(key)
		n := 0
		for _, x := range h {
			if x.Ticket == stale.Ticket && x.Outcome == string(gates.Superseded) {
				n++
			}
		}
		if n != 1 || len(h) != len(beforeH)+1 {
			e.fatalf("the history holds the refusal %d times and %d entries after the retry; want once, %d entries", n, len(h), len(beforeH)+1)
		}
	}},
	{"context/a promote whose commit has begun completes", func(e *env) {
		cm, ok := e.inst.(Committer)
		if !ok {
			e.t.Skip("the instance is no storetest.Committer")
		}
		e.run(key, "first")
		sess, jobDir, data := e.job(key, "job")
		run := turn(data, "second", 100)
		e.stage(jobDir, run)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		cm.AtCommit(cancel)
		res, err := e.s.PromoteContext(ctx, sess, store.PromoteRequest{PiVersion: piVersion})
		if err != nil || !res.Promoted || res.Gen != 2 || res.Bytes != int64(len(run)) {
			e.fatalf("a promote cancelled once its commit began = %+v, %v; want promoted gen 2", res, err)
		}
		if ctx.Err() == nil {
			e.fatalf("the commit's hook never ran: nothing was cancelled")
		}
		sc, h := e.record(key)
		if sc.Transcript == nil || sc.Transcript.Gen != 2 || len(h) != 2 {
			e.fatalf("record %+v, %d history entries; want gen 2, 2 entries", sc.Transcript, len(h))
		}
		again, jd := e.resolve(key, localJob())
		if e.want(again, true, gates.Resumed); !bytes.Equal(e.staged(jd), run) {
			e.fatalf("the key resumes %d bytes, not the run's %d", len(e.staged(jd)), len(run))
		}
	}},
}
