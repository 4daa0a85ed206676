package engage

import (
	"fmt"
	"math"

	"sessdb/store/transcript"
)

// Options configure a replay. Window and Reserve are used as given (a
// reserve of 0 is a setting pi accepts), so the zero Options is refused with
// ErrOptions rather than read as a window of 0; DefaultOptions has pi's
// defaults.
type Options struct {
	Window  int64 // the model's context window
	Reserve int64 // compaction.reserveTokens
	// PrunedRatio models a transcript recorded without pruning: once a
	// request goes out pruned under a policy, the usage that policy's next
	// estimates anchor on is PrunedRatio times the recorded one. 0 means 1:
	// replay what was recorded, no model.
	PrunedRatio float64
}

// DefaultOptions returns pi's defaults (threshold 183616) and the usage as
// recorded.
func DefaultOptions() Options {
	return Options{Window: DefaultWindow, Reserve: DefaultReserve, PrunedRatio: 1}
}

// Row is one request of a replay.
type Row struct {
	Request
	// Stateless and Sticky tell whether the request goes out pruned under
	// each policy.
	Stateless, Sticky bool
	// StatelessReading and StickyReading are the readings each policy
	// decided on: Before's reading as recorded, or the modelled one when the
	// ratio is not 1.
	StatelessReading, StickyReading Reading
}

// Policy sums one policy's decisions over a replay.
type Policy struct {
	Pruned int // requests that went out pruned
	// Switches counts requests whose prompt changed shape (raw to pruned or
	// back) from the previous request's: each one is a provider prompt-cache
	// miss. A request that carries a reset, or goes to another model than
	// the request before it, is not counted: the first request has no
	// cached prefix, a compaction rewrites the prefix under every policy,
	// and the provider keeps a cache per model, so that miss is not the
	// policy's doing.
	Switches int
	// Rebilled sums the prompt tokens that the switches made the provider
	// cache again: the recorded prompt (input+cacheRead+cacheWrite, times
	// the ratio when the request went out pruned under a modelled ratio) of
	// every request that records one and goes out in another shape than the
	// last request that recorded one, with no reset or model change on
	// either or between them. Usually that is the switching request itself. A failed or
	// aborted request usually records no prompt and was cached as nothing,
	// so a switch on one is billed at the next request that records a
	// prompt, if that request's shape still differs from the cached one: a
	// second switch back before it cancels the first. The sum saturates at
	// math.MaxInt64.
	Rebilled int64
}

// Replay is a transcript replayed request by request under the stateless
// check and the sticky rule, side by side.
type Replay struct {
	Window, Reserve, Threshold int64   // the options' window and reserve, and their threshold
	PrunedRatio                float64 // the options' ratio, 1 when they gave 0
	// Modelled is true when PrunedRatio is not 1: the readings and
	// re-billed tokens of pruned requests are then a model, not a
	// measurement.
	Modelled          bool
	Rows              []Row  // one per request, in branch order
	Stateless, Sticky Policy // each policy's sums over Rows
}

// check refuses options that describe no threshold or no ratio
// (ErrOptions), naming the option at fault: a Go caller's zero Options
// and a reserve above its window read alike otherwise.
func (o Options) check() error {
	switch {
	case o.Reserve < 0:
		return fmt.Errorf("%w: reserve %d is negative", ErrOptions, o.Reserve)
	case o.Window <= o.Reserve:
		return fmt.Errorf("%w: window %d is not above reserve %d (DefaultOptions has pi's)", ErrOptions, o.Window, o.Reserve)
	case o.Window > MaxWindow:
		return fmt.Errorf("%w: window %d is above MaxWindow (%d)", ErrOptions, o.Window, int64(MaxWindow))
	case !(o.PrunedRatio > 0 && o.PrunedRatio <= 1):
		return fmt.Errorf("%w: pruned ratio %v is not in (0, 1]", ErrOptions, o.PrunedRatio)
	}
	return nil
}

// Replay runs the transcript's requests through both policies. Each request
// point is an assistant message on the branch; the first request carries a
// Start reset and the first after a compaction a Compaction reset. Both
// policies read pi's guarded estimate (unknown after a compaction until a
// fresh usage), so the two columns differ by stickiness alone. Policy says
// how switches and re-billed tokens are counted.
func (t *Transcript) Replay(opt Options) (*Replay, error) {
	if opt.PrunedRatio == 0 {
		opt.PrunedRatio = 1
	}
	if err := opt.check(); err != nil {
		return nil, err
	}
	rp := &Replay{
		Window: opt.Window, Reserve: opt.Reserve, Threshold: Threshold(opt.Window, opt.Reserve),
		PrunedRatio: opt.PrunedRatio, Modelled: opt.PrunedRatio != 1,
	}
	var n int
	if t.b != nil {
		n = t.b.Len
	}
	// Rows is the one record kept per request: the Requests are made as
	// the walk passes them, never held in a list of their own, and Rows is
	// sized once, not grown by doubling.
	rp.Rows = make([]Row, 0, t.requestCount())
	statelessPruned := make([]bool, n)
	stickyPruned := make([]bool, n)
	stateless := t.b.Estimator(modelled(statelessPruned, opt.PrunedRatio))
	sticky := t.b.Estimator(modelled(stickyPruned, opt.PrunedRatio))
	var reqs *requests
	if t.b != nil {
		reqs = t.requestWalker()
	}
	state := Raw
	var statelessCache, stickyCache cached
	for pos := 0; pos < n; pos++ {
		if req, ok := reqs.at(pos); ok {
			row := Row{Request: req, StatelessReading: Estimate(stateless.Retry()).Reading(), StickyReading: Estimate(sticky.Retry()).Reading()}
			row.Stateless = Stateless(row.StatelessReading, rp.Threshold) == Engaged
			state = Step(state, row.StickyReading, rp.Threshold, row.Event)
			row.Sticky = state == Engaged
			statelessPruned[pos], stickyPruned[pos] = row.Stateless, row.Sticky
			prev := row // the first request has nothing to switch from
			if r := len(rp.Rows); r > 0 {
				prev = rp.Rows[r-1]
			}
			rp.Stateless.count(row, row.Stateless, prev.Stateless, rp.PrunedRatio, &statelessCache)
			rp.Sticky.count(row, row.Sticky, prev.Sticky, rp.PrunedRatio, &stickyCache)
			rp.Rows = append(rp.Rows, row)
		}
		stateless.Advance()
		sticky.Advance()
	}
	return rp, nil
}

// modelled is a policy's provider: the usage of an assistant whose request
// went out pruned under the policy is scaled by ratio before anything
// anchors on it. pruned is filled in as the replay decides, always before
// the estimator reaches the position.
func modelled(pruned []bool, ratio float64) transcript.UsageFunc {
	return func(pos int, u float64) float64 {
		if pruned[pos] {
			return math.Round(u * ratio)
		}
		return u
	}
}

// cached is the shape of the prompt the provider last cached under a
// policy: that of the last request that recorded a prompt, or none since a
// reset (or before the first request), when the next miss is not the
// policy's doing.
type cached uint8

const (
	cachedNone cached = iota
	cachedRaw
	cachedPruned
)

func (p *Policy) count(row Row, pruned, prev bool, ratio float64, c *cached) {
	if pruned {
		p.Pruned++
	}
	if row.cacheReset() {
		// The first request has no cached prefix, a compaction rewrites
		// the prefix under every policy, and another model has a cache of
		// its own.
		*c = cachedNone
	} else if pruned != prev {
		p.Switches++
	}
	if row.Prompt <= 0 {
		return // nothing was cached: the provider billed no prompt
	}
	shape := cachedRaw
	if pruned {
		shape = cachedPruned
	}
	if !row.cacheReset() && *c != cachedNone && *c != shape {
		prompt := row.Prompt
		if pruned {
			prompt = int64(math.Round(float64(prompt) * ratio))
		}
		// A hand-made transcript's prompts can sum past int64: saturate
		// rather than wrap to a negative count.
		p.Rebilled += min(prompt, math.MaxInt64-p.Rebilled)
	}
	*c = shape
}
