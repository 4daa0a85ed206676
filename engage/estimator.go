package engage

import "math"

// estimator walks the branch root first and keeps pi's estimate of the
// context at the current position up to date, so the estimate before every
// request costs O(1) instead of a rebuild of the context: pi's
// buildSessionContext(entries, parentId) is the branch prefix ending just
// before the request, and the prefix grows by one entry per step. Only a
// compaction rebuilds, over the entries it keeps.
//
// pruned and ratio model a policy: the usage of an assistant whose request
// went out pruned is scaled by ratio before anything anchors on it. With
// pruned nil the estimator reproduces the transcript as recorded.
type estimator struct {
	t      *Transcript
	pruned []bool // by path position
	ratio  float64

	anchor    int64
	anchorPos int // -1 when nothing anchors
	trailing  int64
	fallback  int64
	messages  int

	compacted bool // a compaction is on the branch so far
	fresh     bool // a valid assistant follows the latest compaction
	freshUsed bool // ... and the latest such has a non-zero usage
}

func newEstimator(t *Transcript, pruned []bool, ratio float64) *estimator {
	return &estimator{t: t, pruned: pruned, ratio: ratio, anchorPos: -1}
}

// usage is the usage of the assistant at pos as this policy's provider would
// have reported it.
func (e *estimator) usage(pos int) int64 {
	u := e.t.nodes[e.t.path[pos]].usage
	if e.pruned != nil && e.pruned[pos] {
		return int64(math.Round(float64(u) * e.ratio))
	}
	return u
}

// add advances the context by the entry at path position pos.
func (e *estimator) add(pos int) {
	n := &e.t.nodes[e.t.path[pos]]
	switch n.kind {
	case kindCompaction:
		e.compact(pos)
	case kindMessage, kindAssistant:
		e.message(pos)
		if n.kind == kindAssistant && n.valid && e.compacted {
			// getContextUsage scans back from the leaf for the first
			// assistant that is not an error or aborted: the latest one.
			e.fresh, e.freshUsed = true, e.usage(pos) > 0
		}
	}
}

func (e *estimator) message(pos int) {
	n := &e.t.nodes[e.t.path[pos]]
	e.messages++
	e.fallback += n.tokens
	if n.anchor {
		e.anchor, e.anchorPos, e.trailing = e.usage(pos), pos, 0
		return
	}
	e.trailing += n.tokens
}

// compact rebuilds the context as buildSessionContext does for a branch whose
// latest compaction is at pos: the summary, then the entries from
// firstKeptEntryId up to the compaction. An id that is not found before the
// compaction keeps nothing.
func (e *estimator) compact(pos int) {
	n := &e.t.nodes[e.t.path[pos]]
	e.anchor, e.anchorPos = 0, -1
	e.trailing, e.fallback, e.messages = n.tokens, n.tokens, 1
	e.compacted, e.fresh, e.freshUsed = true, false, false
	id, ok := e.t.firstKept[e.t.path[pos]]
	if !ok {
		return
	}
	first, ok := e.t.position(id)
	if !ok || first >= pos {
		return
	}
	for p := first; p < pos; p++ {
		if k := e.t.nodes[e.t.path[p]].kind; k == kindMessage || k == kindAssistant {
			e.message(p)
		}
	}
}

func (e *estimator) estimate() Estimate {
	est := Estimate{
		Tokens:   e.anchor + e.trailing,
		Anchor:   e.anchor,
		Trailing: e.trailing,
		Fallback: e.fallback,
		Messages: e.messages,
		Unknown:  e.compacted && !(e.fresh && e.freshUsed),
	}
	if e.anchorPos >= 0 {
		est.AnchorEntry = e.t.nodes[e.t.path[e.anchorPos]].id
	}
	return est
}

// position returns the first position on the branch of the entry with id,
// as pi's path.findIndex finds it.
func (t *Transcript) position(id string) (int, bool) {
	p, ok := t.firstPos[id]
	return int(p), ok
}

// Request is one request point of a transcript: an assistant message on the
// branch, failed ones included. Its estimate is pi's estimate over the
// context at its parent, what pi saw just before sending it.
type Request struct {
	N          int    // 1-based
	Entry      string // the assistant entry's id
	Line       int64  // its line in the file
	Event      Event  // Start for the first request, Compaction for the first after a compaction
	Before     Estimate
	StopReason string
	// Usage is the answer's recorded calculateContextTokens(usage); Prompt
	// its input+cacheRead+cacheWrite, the prompt the provider billed.
	Usage, Prompt int64
}

// Requests returns the transcript's request points in branch order, with
// the estimates as recorded. The first request of the session carries Start
// even when a compaction precedes it.
func (t *Transcript) Requests() []Request {
	var reqs []Request
	est := newEstimator(t, nil, 1)
	ev := Start
	for pos, i := range t.path {
		n := &t.nodes[i]
		switch n.kind {
		case kindAssistant:
			reqs = append(reqs, Request{
				N: len(reqs) + 1, Entry: n.id, Line: n.line, Event: ev,
				Before: est.estimate(), StopReason: n.stop, Usage: n.usage, Prompt: n.prompt,
			})
			ev = None
		case kindCompaction:
			if ev == None {
				ev = Compaction
			}
		}
		est.add(pos)
	}
	return reqs
}
