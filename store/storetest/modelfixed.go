package storetest

import (
	"fmt"
	"strings"
	"testing"
	"time"
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
