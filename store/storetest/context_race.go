package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"time"

	"sessdb/gates"
	"sessdb/store"
)

// Cancels racing the calls: how many keys run at once, how many rounds
// each, and the longest a caller waits before it gives up (drawn anew for
// every call, so that some cancels land before a call's commit, some
// after, some in its copies and some before the call begins).
const (
	raceKeys     = 6
	raceRounds   = 12
	raceMaxDelay = 15 * time.Millisecond
)

// raceCounts is what a race's calls came to, for its log: a race whose
// cancels all landed on one side of the commit tested nothing.
type raceCounts struct {
	mu                                   sync.Mutex
	promoted, promoteCancelled           int
	resolved, resolveCancelled, failures int
	failed                               []string
}

func (c *raceCounts) fail(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.failures++
	if len(c.failed) < 5 {
		c.failed = append(c.failed, fmt.Sprintf(format, args...))
	}
}

func (c *raceCounts) add(p *int) {
	c.mu.Lock()
	*p++
	c.mu.Unlock()
}

// raceCtx is a context its caller gives up on after a random delay of up
// to raceMaxDelay, or before the call (before) at times.
func raceCtx() (ctx context.Context, cancel context.CancelFunc, before bool) {
	ctx, cancel = context.WithCancel(context.Background())
	if d := rand.N(raceMaxDelay + raceMaxDelay/4); d > raceMaxDelay {
		cancel()
		return ctx, cancel, true
	} else {
		time.AfterFunc(d, cancel)
	}
	return ctx, cancel, false
}

// raceKey runs rounds of one job each on key: a resolve given up at a
// random moment, then one that is not, a run staged, and a promote given
// up at a random moment. Every outcome must be one of the two the store
// promises: a resolve is a Session with its ticket and staged copy, or the
// cancel with neither; a promote is promoted (the key moved on one
// generation) or promote-failed with the cancel (nothing of the key
// changed, the run kept, and a retry with the same Session promotes it).
func (e *env) raceKey(k string, c *raceCounts) {
	j := localJob()
	for round := range raceRounds {
		j.ID = fmt.Sprintf("job-%d", round)
		// A resolve given up, in a job dir an earlier resolve filled.
		jobDir := filepath.Join(e.t.TempDir(), "job")
		if _, err := e.s.Resolve(k, j, jobDir); err != nil {
			c.fail("%s round %d: resolve: %v", k, round, err)
			return
		}
		was, err := os.ReadFile(filepath.Join(jobDir, store.TicketName))
		wasStaged, serr := os.ReadFile(stagedPath(jobDir))
		if err = errors.Join(err, serr); err != nil {
			c.fail("%s round %d: %v", k, round, err)
			return
		}
		ctx, cancel, early := raceCtx()
		sess, err := e.s.ResolveContext(ctx, k, j, jobDir)
		cancel()
		_, stagedErr := os.Lstat(stagedPath(jobDir))
		_, ticketErr := os.Lstat(filepath.Join(jobDir, store.TicketName))
		switch {
		case err == nil:
			c.add(&c.resolved)
			got, rerr := os.ReadFile(stagedPath(jobDir))
			ticket, terr := store.ReadTicket(jobDir)
			if rerr != nil || terr != nil || int64(len(got)) != sess.Bytes || store.Checksum(crc(got)) != sess.CRC32C || !reflect.DeepEqual(ticket, sess) {
				c.fail("%s round %d: a resolve that returned %s left %d staged bytes (%v), ticket %v", k, round, describe(sess), len(got), rerr, terr)
				return
			}
		case !errors.Is(err, context.Canceled) || errors.Is(err, store.ErrKeyLocked):
			c.fail("%s round %d: a resolve given up = %v, want context.Canceled alone", k, round, err)
			return
		case untouched(jobDir, was, wasStaged):
			// Done before the call (a cancel drawn before it, or one
			// that fired before its first look): the job dir is as it
			// was, the earlier resolve's ticket and copy whole.
			c.add(&c.resolveCancelled)
		case early:
			c.fail("%s round %d: a resolve whose ctx was done before changed the job dir: ticket %v, staged file %v", k, round, ticketErr, stagedErr)
			return
		case !errors.Is(stagedErr, os.ErrNotExist) || !errors.Is(ticketErr, os.ErrNotExist):
			c.fail("%s round %d: a resolve given up left its staged file (%v) or a ticket (%v)", k, round, stagedErr, ticketErr)
			return
		default:
			c.add(&c.resolveCancelled)
		}

		// The job itself, and its promote given up at a random moment.
		jobDir = e.t.TempDir()
		sess, err = e.s.Resolve(k, j, jobDir)
		if err != nil {
			c.fail("%s round %d: resolve: %v", k, round, err)
			return
		}
		data, err := os.ReadFile(stagedPath(jobDir))
		if err != nil {
			c.fail("%s round %d: %v", k, round, err)
			return
		}
		if len(data) == 0 {
			data = header(e.clock.now)
		}
		run := turn(data, fmt.Sprint(round), 100)
		if err := os.WriteFile(stagedPath(jobDir), run, 0o600); err != nil {
			c.fail("%s round %d: %v", k, round, err)
			return
		}
		before, beforeH, err := e.inst.Record(k)
		if err != nil {
			c.fail("%s round %d: read back: %v", k, round, err)
			return
		}
		req := store.PromoteRequest{PiVersion: piVersion}
		ctx, cancel, _ = raceCtx()
		res, err := e.s.PromoteContext(ctx, sess, req)
		cancel()
		after, afterH, rerr := e.inst.Record(k)
		if rerr != nil {
			c.fail("%s round %d: read back: %v", k, round, rerr)
			return
		}
		want := uint64(round + 1)
		switch {
		case err == nil && res.Promoted && !res.Repeat && res.Gen == want && after.Transcript != nil && after.Transcript.Gen == want && len(afterH) == len(beforeH)+1:
			c.add(&c.promoted)
			continue
		case err == nil:
			c.fail("%s round %d: a promote given up = %+v; the key holds gen %v, %d history entries (was %d)", k, round, res, after.Transcript, len(afterH), len(beforeH))
			return
		case res.Promoted || res.Reason != gates.PromoteFailed || !errors.Is(err, context.Canceled) || errors.Is(err, store.ErrKeyLocked):
			c.fail("%s round %d: a promote given up = %+v, %v; want promote-failed with context.Canceled", k, round, res, err)
			return
		case !reflect.DeepEqual(after, before) || !reflect.DeepEqual(afterH, beforeH):
			again, aerr := e.s.Promote(sess, req)
			c.fail("%s round %d: a promote reported %v changed the key (gen %v -> %v, %d -> %d entries); its retry = %+v, %v", k, round, err, before.Transcript, after.Transcript, len(beforeH), len(afterH), again, aerr)
			return
		}
		if now, err := os.ReadFile(stagedPath(jobDir)); err != nil || !bytes.Equal(now, run) {
			c.fail("%s round %d: a promote given up did not keep the run: %d bytes, %v", k, round, len(now), err)
			return
		}
		c.add(&c.promoteCancelled)
		if again, err := e.s.Promote(sess, req); err != nil || !again.Promoted || again.Repeat || again.Gen != want {
			c.fail("%s round %d: the retry of a promote given up = %+v, %v; want promoted gen %d", k, round, again, err, want)
			return
		}
	}
}

// raceContextPromise is the promise of a caller's cancel racing its calls:
// each outcome is one the store promises, never a committed promotion
// reported as failed, nor a verdict or a fault for a cancel.
var raceContextPromise = promise{"context/cancels racing resolves and promotes on many keys", func(e *env) {
	c := &raceCounts{}
	var wg sync.WaitGroup
	for i := range raceKeys {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e.raceKey(store.Key("github", "acme/race", fmt.Sprint("k", i)), c)
		}()
	}
	wg.Wait()
	e.t.Logf("resolves: %d returned, %d given up; promotes: %d promoted, %d given up", c.resolved, c.resolveCancelled, c.promoted, c.promoteCancelled)
	if c.failures > 0 {
		e.fatalf("%d of the racing keys failed, among them:\n%s", c.failures, fmt.Sprint(c.failed))
	}
	if c.promoted == 0 || c.promoteCancelled == 0 || c.resolved == 0 || c.resolveCancelled == 0 {
		e.fatalf("the cancels all fell on one side: resolves %d/%d, promotes %d/%d", c.resolved, c.resolveCancelled, c.promoted, c.promoteCancelled)
	}
}}

// untouched reports whether jobDir still holds the ticket and the staged
// copy it held (was, staged).
func untouched(jobDir string, was, staged []byte) bool {
	t, terr := os.ReadFile(filepath.Join(jobDir, store.TicketName))
	s, serr := os.ReadFile(stagedPath(jobDir))
	return terr == nil && serr == nil && bytes.Equal(t, was) && bytes.Equal(s, staged)
}
