package transcript

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// walkCompact is compact as it was before the running sums: the kept
// entries from firstKeptEntryId up to the compaction, added again one by
// one. It is the reference the sums must agree with.
func walkCompact(e *Estimator, pos int) {
	n := e.b.payload(pos)
	e.anchor, e.anchorPos = 0, -1
	e.trailing, e.fallback, e.messages = n.tokens, n.tokens, 1
	e.trailingOdd = odds(n)
	e.compacted, e.fresh, e.freshUsed = true, false, false
	first, ok := e.keptFrom(pos)
	if !ok {
		return
	}
	for p := first; p < pos; p++ {
		if k := e.b.payload(p).kind; k == KindMessage || k == KindAssistant {
			e.message(p)
		}
	}
}

// walkAdvance is Advance with walkCompact for a compaction.
func walkAdvance(e *Estimator) {
	pos := e.pos
	if e.b.payload(pos).kind != KindCompaction {
		e.Advance()
		return
	}
	e.pos++
	e.failed, e.failedN, e.failedOdd = 0, 0, 0
	walkCompact(e, pos)
}

// mixedBranch is a linear transcript of n entries drawn by r: prompts and
// answers, some pi cannot count, failed answers, answers with no usage or
// one that sums to no number, and compactions keeping from an entry drawn
// among those before them (or from one not on the branch), some with a
// summary pi cannot measure. The last entry's id is falsy when falsyLeaf.
func mixedBranch(r *rand.Rand, n int, falsyLeaf bool) string {
	lines := []string{`{"type":"session","version":3,"id":"s","timestamp":"2026-03-10T09:14:55.120Z","cwd":"/w"}`}
	parent := "null"
	for i := range n {
		id := fmt.Sprintf(`"e%d"`, i)
		if falsyLeaf && i == n-1 {
			id = `""`
		}
		var body string
		switch k := r.IntN(10); {
		case k == 0:
			body = `"type":"message","message":{"role":"user","content":[null]}`
		case k <= 2:
			body = fmt.Sprintf(`"type":"message","message":{"role":"user","content":%q}`, strings.Repeat("q", 4*(1+r.IntN(9))))
		case k == 3:
			body = fmt.Sprintf(`"type":"message","message":{"role":"assistant","content":[{"type":"text","text":%q}],"stopReason":"error"}`, strings.Repeat("x", 4*r.IntN(5)))
		case k == 4:
			body = `"type":"message","message":{"role":"assistant","content":5,"stopReason":"error"}`
		case k == 5:
			body = `"type":"message","message":{"role":"assistant","content":[{"type":"text","text":"abcd"}],"stopReason":"stop"}`
		case k == 6:
			body = `"type":"message","message":{"role":"assistant","content":[],"usage":{"input":1,"output":2,"cacheRead":3},"stopReason":"stop"}`
		case k == 7 && i > 0:
			kept := fmt.Sprintf(`"e%d"`, r.IntN(i+1)) // i: the compaction itself
			if r.IntN(8) == 0 {
				kept = `"nowhere"`
			}
			summary := `"ssssssss"`
			if r.IntN(4) == 0 {
				summary = "5"
			}
			body = fmt.Sprintf(`"type":"compaction","summary":%s,"firstKeptEntryId":%s,"tokensBefore":1`, summary, kept)
		default:
			body = fmt.Sprintf(`"type":"message","message":{"role":"assistant","content":[{"type":"text","text":"ab"}],"usage":{"totalTokens":%d},"stopReason":"stop"}`, 100+r.IntN(900))
		}
		lines = append(lines, fmt.Sprintf(`{"id":%s,"parentId":%s,%s}`, id, parent, body))
		parent = id
	}
	return strings.Join(lines, "\n") + "\n"
}

// A compaction's context, rebuilt from the sums kept along the walk, is
// the one the entries it keeps make added again one by one: at every
// position of many branches mixing anchors, failed answers, messages pi
// cannot count and compactions keeping from anywhere before them (before
// the last anchor, after it, from a failed answer, from a compaction),
// the estimate, the retry's estimate and whether pi's is no number (what
// a falsy leaf reports, Branch.Final) are the walk's.
func TestACompactionsSumsAreTheWalkOfWhatItKeeps(t *testing.T) {
	r := rand.New(rand.NewPCG(45, 45))
	compactions, keptAnchorBefore := 0, 0
	for f := range 400 {
		file := mixedBranch(r, 6+r.IntN(40), f%4 == 0)
		b, err := Load(strings.NewReader(file))
		if err != nil {
			t.Fatal(err)
		}
		sums, walk := b.Estimator(nil), b.Estimator(nil)
		for pos := 0; pos < b.Len; pos++ {
			if first, ok := sums.keptFrom(pos); ok {
				compactions++
				if sums.lastAnchor >= 0 && sums.lastAnchor < first {
					keptAnchorBefore++
				}
			}
			sums.Advance()
			walkAdvance(walk)
			if s, w := sums.Estimate(), walk.Estimate(); s != w {
				t.Fatalf("file %d, after position %d: estimate %+v, the walk's %+v\n%s", f, pos, s, w, file)
			}
			if s, w := sums.Retry(), walk.Retry(); s != w {
				t.Fatalf("file %d, after position %d: retry %+v, the walk's %+v\n%s", f, pos, s, w, file)
			}
			if s, w := sums.noNumber(), walk.noNumber(); s != w {
				t.Fatalf("file %d, after position %d: no number %v, the walk's %v\n%s", f, pos, s, w, file)
			}
		}
		if b.Final != sums.Estimate() && b.idKind(b.at(b.Len-1)) != idNone {
			t.Fatalf("file %d: Branch.Final %+v, the walk's %+v", f, b.Final, sums.Estimate())
		}
	}
	// The draw must reach the cases the sums treat apart.
	if compactions < 300 || keptAnchorBefore < 50 {
		t.Fatalf("%d compactions keeping entries, %d of them from after the last anchor: too few to test", compactions, keptAnchorBefore)
	}
}

// A retry's estimate has no reading where pi's is no number: the anchor's
// usage sums to none (cacheWrite absent), or a message after the anchor
// the retry keeps is one pi cannot count, though a failed answer pi could
// not count came before the anchor (a run of failed answers ends where
// anything that adds to the context comes).
func TestARetryHasNoReadingWherePisIsNoNumber(t *testing.T) {
	const head = `{"type":"session","version":3,"id":"s","timestamp":"2026-03-10T09:14:55.120Z","cwd":"/w"}` + "\n"
	for _, c := range []struct{ name, lines string }{
		{"an anchor summing to no number", `{"type":"message","id":"u0","parentId":null,"message":{"role":"user","content":"hi"}}
{"type":"message","id":"a1","parentId":"u0","message":{"role":"assistant","content":[],"usage":{"input":1,"output":2,"cacheRead":3},"stopReason":"stop"}}
{"type":"message","id":"u2","parentId":"a1","message":{"role":"user","content":"more"}}
{"type":"message","id":"a3","parentId":"u2","message":{"role":"assistant","content":[],"stopReason":"error"}}`},
		{"a message pi cannot count after a failed one it could not", `{"type":"message","id":"u0","parentId":null,"message":{"role":"user","content":"hi"}}
{"type":"message","id":"a1","parentId":"u0","message":{"role":"assistant","content":5,"stopReason":"error"}}
{"type":"message","id":"a2","parentId":"a1","message":{"role":"assistant","content":[],"usage":{"totalTokens":100},"stopReason":"stop"}}
{"type":"message","id":"u3","parentId":"a2","message":{"role":"user","content":[null]}}
{"type":"message","id":"a4","parentId":"u3","message":{"role":"assistant","content":[],"stopReason":"error"}}`},
	} {
		b, err := Load(strings.NewReader(head + c.lines + "\n"))
		if err != nil {
			t.Fatal(err)
		}
		est := b.Estimator(nil)
		for est.Pos() < b.Len {
			est.Advance()
		}
		if r := est.Retry(); !r.Unknown {
			t.Errorf("%s: the retry's estimate %+v, want no reading (unknown)", c.name, r)
		}
	}
}
