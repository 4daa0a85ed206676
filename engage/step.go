package engage

import "fmt"

// State is the engagement of one session: whether its requests go out
// pruned. The zero value is Raw.
type State uint8

const (
	// Raw: requests go out as pi builds them.
	Raw State = iota
	// Engaged: requests go out pruned, on one stable pruned prefix.
	Engaged
)

// String returns "raw" or "engaged", the words of the replay's table.
func (s State) String() string {
	switch s {
	case Raw:
		return "raw"
	case Engaged:
		return "engaged"
	}
	return fmt.Sprintf("State(%d)", uint8(s))
}

// Event is what happened to a session since its previous request. The zero
// value is None.
type Event uint8

const (
	// None: an ordinary request.
	None Event = iota
	// Start: the first request of a session (or of a process that took the
	// session over); the state before it is not known to be small.
	Start
	// Compaction: a compaction ran since the previous request; the raw size
	// dropped, so the session may run raw again until it re-crosses.
	Compaction
)

// String returns "none", "start" or "compaction".
func (e Event) String() string {
	switch e {
	case None:
		return "none"
	case Start:
		return "start"
	case Compaction:
		return "compaction"
	}
	return fmt.Sprintf("Event(%d)", uint8(e))
}

// Reading is a context estimate as the controller sees it. The zero value
// is unknown, which is what pi reports after a compaction until a response
// measures the new context.
type Reading struct {
	Tokens int64 // the estimate (its floor, where pi's has a fraction); meaningful only when Known
	Known  bool  // false where pi reports null

	// frac is set by Estimate.Reading where pi's estimate is not a whole
	// number: it lies strictly between Tokens and Tokens+1.
	frac bool
}

// Known returns a known reading of n tokens.
func Known(n int64) Reading { return Reading{Tokens: n, Known: true} }

// String returns the token count, or "unknown".
func (r Reading) String() string {
	if !r.Known {
		return "unknown"
	}
	return fmt.Sprint(r.Tokens)
}

// Crosses reports whether r is over threshold. The comparison is strict, as
// pi's shouldCompact compares, and an unknown reading never crosses. A
// reading from an estimate with a fraction (see transcript.Estimate) is
// compared as pi compares it: Tokens+0.5, say, is over Tokens.
func (r Reading) Crosses(threshold int64) bool {
	return r.Known && (r.Tokens > threshold || r.frac && r.Tokens == threshold)
}

// pi's defaults: a 200k-token window and compaction.reserveTokens 16384.
// DefaultOptions returns them.
const (
	DefaultWindow  = 200000 // tokens: the model's context window
	DefaultReserve = 16384  // tokens: compaction.reserveTokens
)

// MaxWindow is the largest window a replay takes, and so the largest
// threshold a reading can be compared with: a reading is clamped at 2^62
// (transcript.Estimate), which stands for any estimate from 2^62 up, over
// every threshold below it as pi's float comparison puts it.
const MaxWindow = 1<<62 - 1

// Threshold is pi's compaction threshold, contextWindow - reserveTokens
// (183616 with the defaults). Engagement uses pi's own threshold so that
// pruning starts where compaction would otherwise be next.
func Threshold(window, reserve int64) int64 { return window - reserve }

// Step is the sticky engagement rule, a pure function of the carried state,
// the reading before this request, the threshold and the event since the
// previous request. The rules, in this order:
//
//  1. a reading over the threshold engages, whatever was carried and even on
//     a reset event (a session still above the threshold right after a
//     compaction re-engages at once);
//  2. otherwise a reset event (Start, Compaction) disengages;
//  3. otherwise the carried state stays.
//
// Rule 3 is the point: once engaged, a request stays pruned even though its
// pruned usage pulls the next reading below the threshold, so the prompt
// prefix switches shape once instead of on every other request. An unknown
// reading never crosses, so a compaction's reset is not undone by the
// pre-compaction usage still on the kept messages.
func Step(prev State, r Reading, threshold int64, ev Event) State {
	switch {
	case r.Crosses(threshold):
		return Engaged
	case ev != None:
		return Raw
	}
	return prev
}

// Stateless is the check sticky engagement replaces: each request on its own
// reading. It is kept for the replay's side-by-side count.
func Stateless(r Reading, threshold int64) State {
	if r.Crosses(threshold) {
		return Engaged
	}
	return Raw
}
