package engage

import "sessdb/store/transcript"

// Request is one request point of a transcript: an assistant message on the
// branch, failed ones included. Its estimate is pi's estimate over the
// context at its parent, what pi saw just before sending it: where the
// request retries a failed answer (its parent is one), without the failed
// answers pi dropped before retrying (transcript.Estimator.Retry).
type Request struct {
	N          int      // 1-based
	Entry      string   // the assistant entry's id
	Line       int64    // its line in the file
	Event      Event    // Start for the first request, Compaction for the first after a compaction
	Before     Estimate // pi's estimate of the context the request was sent with
	StopReason string   // the answer's stopReason as recorded
	// NewModel is true when the request went to another model than the
	// request before it (the "provider/id" each answer records, where both
	// record one). The provider keeps a prompt cache per model, so such a
	// request finds nothing of the session cached, whatever its shape; it
	// is not a reset of the engagement (the context did not shrink, and
	// the threshold follows the model by itself).
	NewModel bool
	// Usage is the answer's recorded calculateContextTokens(usage); Prompt
	// its input+cacheRead+cacheWrite, the prompt the provider billed.
	Usage, Prompt int64
}

// Requests returns the transcript's request points in branch order, with
// the estimates as recorded. The first request of the session carries Start
// even when a compaction precedes it.
func (t *Transcript) Requests() []Request {
	if t.b == nil {
		return nil
	}
	reqs := make([]Request, 0, t.requestCount())
	w := t.requestWalker()
	for pos := 0; pos < t.b.Len; pos++ {
		if r, ok := w.at(pos); ok {
			reqs = append(reqs, r)
		}
	}
	return reqs
}

// requestCount is the number of request points on the branch.
func (t *Transcript) requestCount() int {
	n := 0
	for pos := 0; t.b != nil && pos < t.b.Len; pos++ {
		if t.b.At(pos).Kind == transcript.KindAssistant {
			n++
		}
	}
	return n
}

// requests walks the branch position by position and makes each request
// point's Request as it passes it, so that a caller holding its own record
// per request (Replay's rows) need not hold a Request per request besides.
type requests struct {
	b     *transcript.Branch
	est   *transcript.Estimator
	ev    Event
	model string // the last request's model, "" before one records it
	n     int    // requests made so far
}

func (t *Transcript) requestWalker() *requests {
	return &requests{b: t.b, est: t.b.Estimator(nil), ev: Start}
}

// at takes the branch's entry at pos, which must be the position after the
// one it last took, and returns its Request if it is a request point.
func (w *requests) at(pos int) (Request, bool) {
	var r Request
	n := w.b.At(pos)
	switch n.Kind {
	case transcript.KindAssistant:
		w.n++
		r = Request{
			N: w.n, Entry: n.ID, Line: n.Line, Event: w.ev,
			Before: Estimate(w.est.Retry()), StopReason: n.StopReason, Usage: n.Usage, Prompt: n.Prompt,
			NewModel: n.Model != "" && w.model != "" && n.Model != w.model,
		}
		w.ev = None
		if n.Model != "" {
			w.model = n.Model
		}
	case transcript.KindCompaction:
		if w.ev == None {
			w.ev = Compaction
		}
	}
	w.est.Advance()
	return r, n.Kind == transcript.KindAssistant
}

// cacheReset reports whether the provider's prompt cache holds nothing of
// the session's prefix for this request under any policy: the first
// request, the first after a compaction (which rewrites the prefix), the
// first on another model (a cache per model). A shape change there is not
// the policy's miss.
func (r *Request) cacheReset() bool { return r.Event != None || r.NewModel }
