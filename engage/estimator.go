package engage

import "sessdb/store/transcript"

// Request is one request point of a transcript: an assistant message on the
// branch, failed ones included. Its estimate is pi's estimate over the
// context at its parent, what pi saw just before sending it.
type Request struct {
	N          int      // 1-based
	Entry      string   // the assistant entry's id
	Line       int64    // its line in the file
	Event      Event    // Start for the first request, Compaction for the first after a compaction
	Before     Estimate // pi's estimate of the context the request was sent with
	StopReason string   // the answer's stopReason as recorded
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
	var reqs []Request
	est := t.b.Estimator(nil)
	ev := Start
	for pos := 0; pos < t.b.Len; pos++ {
		switch n := t.b.At(pos); n.Kind {
		case transcript.KindAssistant:
			reqs = append(reqs, Request{
				N: len(reqs) + 1, Entry: n.ID, Line: n.Line, Event: ev,
				Before: Estimate(est.Estimate()), StopReason: n.StopReason, Usage: n.Usage, Prompt: n.Prompt,
			})
			ev = None
		case transcript.KindCompaction:
			if ev == None {
				ev = Compaction
			}
		}
		est.Advance()
	}
	return reqs
}
