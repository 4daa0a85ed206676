package transcript

import "math"

// Estimate is pi's usage-backed context estimate of one context, as pi
// 0.58.3 computes it (estimateContextTokens, and getContextUsage's null rule).
type Estimate struct {
	// Tokens is estimateContextTokens: Anchor plus Trailing, or the chars/4
	// sum over every message when no message anchors. After a compaction it
	// can be stale (see Unknown). pi computes it in float64 from the usage
	// counters as written; where one is not a whole number (no provider
	// writes one) pi's estimate has a fraction, and Tokens is its floor,
	// with Fractional set. Beyond ±2^62 it is clamped there. Where the
	// estimate is no number (Unknown), Tokens is not pi's: 0 where the
	// anchor's usage is no number, else the sum counted with what pi could
	// not count taken as 0.
	Tokens int64
	// Fractional is true where pi's estimate lies strictly between Tokens
	// and Tokens+1, so that it is over an integer threshold T exactly when
	// Tokens > T, or Tokens == T and Fractional.
	Fractional bool
	// Anchor is the last valid assistant usage: totalTokens, or
	// input+output+cacheRead+cacheWrite when that is 0 (its floor, as
	// Tokens). AnchorEntry is its entry id.
	Anchor      int64
	AnchorEntry string // "" when nothing anchors
	// Trailing is ceil(chars/4) summed over the messages after the anchor.
	Trailing int64
	// Fallback is ceil(chars/4) summed over every message, pi's estimate
	// when nothing anchors.
	Fallback int64
	// Messages is the number of messages in the context.
	Messages int
	// Unknown is true where pi's getContextUsage reports null: the branch
	// has a compaction and no assistant after it has a non-zero usage, so
	// the anchor, if any, measured the context before it was compacted.
	// Branch.Final is never unknown for that when the leaf's id is falsy
	// (absent, "", 0, false): pi's getBranch() is then empty, and its guard
	// finds no compaction. Branch.Final is unknown where pi cannot load the
	// file at all (a line its load throws on, which the scan drops: see the
	// package doc), and an Estimator's estimate at an entry that follows
	// such a line in the file (pi cannot load the file as it stood when the
	// entry was written: Branch.LoadThrowsBefore). It is also true where pi's estimate is no number: the
	// anchor's counters sum to NaN or to a string in pi's arithmetic (a
	// counter absent, a string, an object or an array, infinite counters of
	// opposite signs); Tokens then reads 0. pi never writes such a usage;
	// where it met one, its reading would be NaN or a string, and its
	// threshold test false, as an unknown reading's is.
	Unknown bool
}

// UsageFunc gives the usage an estimate anchors on for the assistant at
// position pos of the branch, whose recorded calculateContextTokens(usage)
// is recorded. A replay uses it to model what a provider would have
// reported for a request sent in another shape.
type UsageFunc func(pos int, recorded float64) float64

// Estimator walks a branch root first and keeps pi's estimate of the context
// at the current position up to date, so the estimate before every request
// costs O(1) instead of a rebuild of the context: pi's
// buildSessionContext(entries, parentId) is the branch prefix ending just
// before the request, and the prefix grows by one entry per step. A
// compaction rebuilds over the entries it keeps, from running sums kept
// along the walk, in O(1): a file of many compactions that each keep the
// whole branch before them costs no more than one of messages. It is not
// safe for concurrent use.
type Estimator struct {
	b     *Branch
	usage UsageFunc // nil: as recorded
	pos   int       // the next position to add

	anchor    float64
	anchorPos int // -1 when nothing anchors
	trailing  int64
	fallback  int64
	messages  int

	compacted bool // a compaction is on the branch so far
	fresh     bool // a valid assistant follows the latest compaction
	freshUsed bool // ... and the latest such has a non-zero usage

	// failed and failedN are the tokens and the number of the failed
	// answers (stopReason "error") the branch so far ends with, one after
	// the other with nothing between them that adds to the context (an
	// entry of KindOther may be): what a retry leaves out (Retry).
	failed  int64
	failedN int

	// trailingOdd and failedOdd count the messages among those summed in
	// trailing and failed whose tokens pi counts as no number
	// (payload.odd): where one is in the estimate, pi's is no number.
	// (Where nothing anchors, trailing is the fallback sum.)
	trailingOdd, failedOdd int

	// run sums the messages of the branch so far, whatever the
	// compactions among them: what a compaction that keeps entries from
	// position first takes is run now less run at first (saved in kept
	// when the walk passes a position some compaction on the branch keeps
	// from), and the anchor among them the last one, if at or after
	// first, with the sums just after it (afterAnchor).
	run, afterAnchor prefix
	lastAnchor       int // the position of the branch's last anchoring message so far, -1 before one
	kept             map[int]prefix
}

// prefix is what the estimate takes of a run of messages: their tokens,
// their number, and how many pi cannot count.
type prefix struct {
	tokens   int64
	messages int
	odd      int
}

// Estimator returns an estimator at the start of the branch (an empty
// context). usage, when not nil, replaces every recorded assistant usage.
func (b *Branch) Estimator(usage UsageFunc) *Estimator {
	e := &Estimator{b: b, usage: usage, anchorPos: -1, lastAnchor: -1}
	for pos := 0; b != nil && pos < b.Len; pos++ {
		if first, ok := e.keptFrom(pos); ok {
			if e.kept == nil {
				e.kept = make(map[int]prefix)
			}
			e.kept[first] = prefix{}
		}
	}
	return e
}

// keptFrom is the position the compaction at pos keeps entries from, when
// it is one and keeps any: its firstKeptEntryId found on the branch before
// it.
func (e *Estimator) keptFrom(pos int) (int, bool) {
	if e.b.payload(pos).kind != KindCompaction {
		return 0, false
	}
	id, ok := e.b.firstKept[e.b.at(pos)]
	if !ok {
		return 0, false
	}
	first, ok := e.b.position(id)
	if !ok || first >= pos {
		return 0, false
	}
	return first, true
}

// Pos is the position of the entry the next Advance adds; Estimate
// describes the context of the branch prefix before it.
func (e *Estimator) Pos() int { return e.pos }

// Advance adds the entry at Pos to the context and moves past it. It panics
// past the end of the branch.
func (e *Estimator) Advance() {
	pos := e.pos
	n := e.b.payload(pos)
	e.pos++
	if _, ok := e.kept[pos]; ok {
		e.kept[pos] = e.run
	}
	switch {
	case n.kind == KindAssistant && n.stop == "error":
		e.failed += n.tokens
		e.failedN++
		e.failedOdd += odds(n)
	case n.kind != KindOther:
		// An entry that adds nothing to the context (an extension's
		// custom entry its turn_end handler wrote before pi retried, a
		// model or thinking-level change, a label) leaves the run of
		// failed answers as it is: pi still drops them.
		e.failed, e.failedN, e.failedOdd = 0, 0, 0
	}
	switch n.kind {
	case KindCompaction:
		e.compact(pos)
	case KindMessage, KindAssistant:
		e.run.tokens += n.tokens
		e.run.messages++
		e.run.odd += odds(n)
		if n.anchor {
			e.lastAnchor, e.afterAnchor = pos, e.run
		}
		e.message(pos)
		if n.kind == KindAssistant && n.valid && e.compacted {
			// getContextUsage scans back from the leaf for the first
			// assistant that is not an error or aborted: the latest one.
			e.fresh, e.freshUsed = true, e.usageAt(pos) > 0
		}
	}
}

// usageAt is the usage of the assistant at pos as this estimator's provider
// reports it.
func (e *Estimator) usageAt(pos int) float64 {
	u := e.b.payload(pos).usage
	if e.usage != nil {
		return e.usage(pos, u)
	}
	return u
}

func (e *Estimator) message(pos int) {
	n := e.b.payload(pos)
	e.messages++
	e.fallback += n.tokens
	if n.anchor {
		e.anchor, e.anchorPos, e.trailing, e.trailingOdd = e.usageAt(pos), pos, 0, 0
		return
	}
	e.trailing += n.tokens
	e.trailingOdd += odds(n)
}

// odds is 1 for a message pi counts as no number, else 0.
func odds(n *payload) int {
	if n.odd {
		return 1
	}
	return 0
}

// compact rebuilds the context as buildSessionContext does for a branch whose
// latest compaction is at pos: the summary, then the entries from
// firstKeptEntryId up to the compaction. An id that is not found before the
// compaction keeps nothing.
func (e *Estimator) compact(pos int) {
	n := e.b.payload(pos)
	e.anchor, e.anchorPos = 0, -1
	e.trailing, e.fallback, e.messages = n.tokens, n.tokens, 1
	e.trailingOdd = odds(n)
	e.compacted, e.fresh, e.freshUsed = true, false, false
	first, ok := e.keptFrom(pos)
	if !ok {
		return
	}
	// The messages from first up to the compaction, as message would add
	// them one by one: all in the fallback, those after the last anchor
	// among them in trailing.
	from := e.kept[first]
	e.fallback += e.run.tokens - from.tokens
	e.messages += e.run.messages - from.messages
	if e.lastAnchor >= first {
		e.anchor, e.anchorPos = e.usageAt(e.lastAnchor), e.lastAnchor
		e.trailing = e.run.tokens - e.afterAnchor.tokens
		e.trailingOdd = e.run.odd - e.afterAnchor.odd
		return
	}
	e.trailing += e.run.tokens - from.tokens
	e.trailingOdd += e.run.odd - from.odd
}

// Estimate is pi's estimate of the context of the branch prefix added so far.
func (e *Estimator) Estimate() Estimate {
	// pi: usageTokens + trailingTokens, in float64; the trailing sum is of
	// whole numbers, and exact.
	x := e.anchor + float64(e.trailing)
	est := Estimate{
		Tokens:     whole(x),
		Fractional: x != math.Floor(x) && math.Abs(x) < 1<<62,
		Anchor:     whole(e.anchor),
		Trailing:   e.trailing,
		Fallback:   e.fallback,
		Messages:   e.messages,
		Unknown:    e.compacted && !(e.fresh && e.freshUsed) || e.noNumber() || e.throws(),
	}
	if e.anchorPos >= 0 {
		est.AnchorEntry = e.b.id(e.anchorPos)
	}
	return est
}

// throws reports whether pi cannot load the file as it stood when the
// entry at the estimator's position was written (its lines before that
// entry's; the whole file once past the last): a line pi's load throws
// on lies there (Branch.LoadThrowsBefore), and pi has no reading.
func (e *Estimator) throws() bool {
	if e.b.throwsAt == 0 {
		return false
	}
	if e.pos >= e.b.Len {
		return true
	}
	i := e.b.at(e.pos)
	return e.b.LoadThrowsBefore(e.b.line.at(i, e.b.recs.at(i).line))
}

// noNumber reports whether pi's estimate of the branch prefix added so far
// is no number: its anchor's usage sums to none, or a message after it is
// one pi cannot count.
func (e *Estimator) noNumber() bool {
	x := e.anchor + float64(e.trailing)
	return x != x || e.trailingOdd > 0
}

// Retry is pi's estimate of the context a request is sent with when the
// branch so far ends in failed answers (stopReason "error"): pi persists a
// failed answer but drops it from its context before it retries
// (agent-session's _handleRetryableError, each retry in turn), so the retry
// is sent, and getContextUsage estimated, without them. Only a retry makes
// an answer the child of a failed one, or of entries that add nothing to
// the context after it (an extension's appendEntry at the failed turn's
// turn_end or agent_end, which pi runs before it retries). A failed answer that was cut off
// mid-stream keeps the text it had streamed, which Estimate would count.
// Elsewhere Retry is Estimate.
func (e *Estimator) Retry() Estimate {
	est := e.Estimate()
	if e.failedN == 0 {
		return est
	}
	// Failed answers anchor nothing, so they are all trailing (and in the
	// fallback sum): taking them out leaves the anchor as it is.
	est.Trailing -= e.failed
	est.Fallback -= e.failed
	est.Messages -= e.failedN
	x := e.anchor + float64(est.Trailing)
	est.Unknown = e.compacted && !(e.fresh && e.freshUsed) || x != x || e.trailingOdd-e.failedOdd > 0 || e.throws()
	est.Tokens = whole(x)
	est.Fractional = x != math.Floor(x) && math.Abs(x) < 1<<62
	return est
}

// whole is the floor of a pi estimate as an int64: clamped to ±2^62 beyond
// them, and 0 for NaN.
func whole(x float64) int64 {
	switch f := math.Floor(x); {
	case f != f:
		return 0
	case f >= 1<<62:
		return 1 << 62
	case f <= -(1 << 62):
		return -(1 << 62)
	default:
		return int64(f)
	}
}
