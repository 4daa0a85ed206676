package storetest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"sessdb/gates"
)

// RunModel's fixed sequences: what the random ones reach only by chance,
// run in every RunModel, the default's included, and judged by the same
// model. Their operations are written with the constructors below, which
// choose each operation's numbers for one plain outcome; the model, not
// the sequence, says what each must give.

// scenario is a fixed sequence.
type scenario struct {
	name string
	ops  []mOp
}

var scenarios = []scenario{
	{
		// docs/job.md: a base names, in a fleet, its record's etcd
		// revision too, so that a key made anew supersedes a ticket from
		// before it; on a sessions root, which cannot tell, the key holds
		// just what the ticket was resolved from, and it promotes. The
		// ticket's own first job (no base) makes the key anew, by a retry
		// of its transcript, with the very bytes of generation 1.
		"a key reaped and made anew with the bytes a ticket was resolved from",
		[]mOp{
			fixedMove(), // the moving harness: onto a fleet
			fixedResolve(0),
			fixedPromote(),
			fixedAdvance(ttl), fixedAdvance(time.Second),
			fixedResolve(0), // resumed from generation 1
			{kind: opReap},
			fixedRetry(), // generation 1 again, the same bytes
			fixedPromote(),
		},
	},
	{
		// Jobs on one base whose runs each would promote, at once, again
		// and again: one promotes, the others are superseded (docs/job.md),
		// which a backend judging a promotion on what it read before it
		// held the key for writing breaks as soon as two of them read it
		// before either commits.
		"jobs on one base promoting at once",
		[]mOp{
			fixedResolve(1), fixedPromote(),
			{kind: opRace, a: 1, b: 0}, {kind: opRace, a: 1, b: 1}, {kind: opRace, a: 1, b: 1},
			fixedMove(), // the moving harness: onto a fleet
			{kind: opRace, a: 1, b: 0}, {kind: opRace, a: 1, b: 1},
		},
	},
}

// fixedResolve resolves a plain job (job 0: pi, venue and model the
// keys' own) on key k, with no bound, in a job dir of its own.
func fixedResolve(k int) mOp { return mOp{kind: opResolve, a: k, b: 0, c: 0, d: 1} }

// fixedPromote promotes the last ticket with its run grown by an answer,
// the request as issued (--require answered, the run's tokens), no
// interruption.
func fixedPromote() mOp { return mOp{kind: opPromote, a: 0, b: 0, c: 1, d: 1} }

// fixedRetry retries the last ticket that promoted, its job dir holding
// the transcript it promoted, nothing promoted onto the key first.
func fixedRetry() mOp { return mOp{kind: opRetry, a: 0, b: 0, c: 1, d: 1} }

func fixedAdvance(d time.Duration) mOp {
	for i, a := range advances {
		if a == d {
			return mOp{kind: opAdvance, a: i}
		}
	}
	panic(fmt.Sprint("no advance of ", d))
}

func fixedMove() mOp { return mOp{kind: opMove} }

// runScenarios runs the fixed sequences on fresh instances of h.
func runScenarios(t *testing.T, h Harness) {
	for _, sc := range scenarios {
		began := time.Now()
		step, msg, log := runOps(t, h, sc.ops)
		if step >= 0 {
			t.Errorf("fixed sequence %q: step %d: %s\n%s", sc.name, step, msg, strings.Join(log, "\n"))
			continue
		}
		t.Logf("fixed sequence %q: %d operations, in %v", sc.name, len(sc.ops), time.Since(began).Round(time.Millisecond))
	}
}

// race resolves two plain jobs on a key (three with op.b odd), stages an
// answered run for each, and promotes them at once.
func (r *run) race(op mOp) error {
	ki := op.a % len(modelKeys)
	key := modelKeys[ki]
	n := 2 + op.b%2
	r.logf("race: %d jobs on %s", n, key[:6])
	first := len(r.tickets)
	for range n {
		if err := r.resolve(fixedResolve(ki)); err != nil {
			return err
		}
	}
	var group []*conc
	for i := first; i < len(r.tickets); i++ {
		tk := r.tickets[i]
		// A lock wait no commit on a loaded machine outlasts: each of
		// them is told promoted or superseded, never locked.
		c := &conc{what: "promote", i: i, tk: tk, lockWait: time.Minute}
		var err error
		if c.staged, c.variant, err = r.stageFor(tk, 0, 1000+i); err != nil {
			return fmt.Errorf("stage: %v", err)
		}
		c.req, c.reading, c.maxBytes = promoteRequest(fixedPromote(), tk, c.staged, c.variant)
		group = append(group, c)
	}
	if err := r.runGroup(key, group, true); err != nil {
		return err
	}
	// Some order gave it all; and it was a race that one of them won, the
	// others superseded (docs/job.md), none locked (which changes nothing,
	// and which the model accepts of a concurrent promote).
	promoted := 0
	for _, c := range group {
		switch {
		case c.res.Promoted:
			promoted++
		case c.res.Reason != gates.Superseded:
			return fmt.Errorf("race: %s: %s, %v; want promoted or superseded", c.tk.job.ID, c.res.Reason, c.err)
		}
	}
	if promoted != 1 {
		return fmt.Errorf("race: %d of the %d jobs on one base promoted, want one", promoted, n)
	}
	return nil
}

// A Starter lines up promotions that run at once, for RunModel's races:
// Line(n) holds each of the instance's next n promotions where it sets out
// to take the key for writing, holding nothing of it yet, until all n are
// there or one of them has returned (left, which the race calls as each
// returns, so that none waits for one that will never come). Whatever the
// scheduler does, none of them then holds the key before every other has
// read whatever it reads of the key unheld: a backend that judges a
// promotion on such a read shows it (two promotions on one base). done
// ends the line. (The key-dir store lines them up with faults.Line, in
// its test files: only a test arms a fault.)
type Starter interface {
	Line(n int) (left, done func())
}
