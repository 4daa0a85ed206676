package transcript

import (
	"fmt"
	"strings"
	"testing"
)

// manyCompactions is a transcript of n turns (a prompt, an answer) each
// followed by a compaction that keeps the whole branch from its first
// entry: every compaction's context is all the messages before it.
func manyCompactions(n int) string {
	var b strings.Builder
	b.WriteString(`{"type":"session","version":3,"id":"s","timestamp":"2026-03-10T09:14:55.120Z","cwd":"/w"}` + "\n")
	parent := "null"
	for i := range n {
		fmt.Fprintf(&b, `{"type":"message","id":"u%d","parentId":%s,"message":{"role":"user","content":"qqqq"}}`+"\n", i, parent)
		fmt.Fprintf(&b, `{"type":"message","id":"a%d","parentId":"u%d","message":{"role":"assistant","content":[],"usage":{"totalTokens":%d},"stopReason":"stop"}}`+"\n", i, i, 100+i)
		fmt.Fprintf(&b, `{"type":"compaction","id":"c%d","parentId":"a%d","summary":"ssssssss","firstKeptEntryId":"u0","tokensBefore":1}`+"\n", i, i)
		parent = fmt.Sprintf(`"c%d"`, i)
	}
	return b.String()
}

// A compaction's context is rebuilt from sums kept along the walk, not by
// walking the entries it keeps again: a walk over a branch of many
// compactions, each keeping everything before it, asks for each anchoring
// usage a bounded number of times, not once per compaction after it (which
// made a promote of an 8 MiB such file take 33 s, and engage replay 162 s).
// The estimates are those of the walk entry by entry: after the i-th
// compaction, the last answer (100+i) anchors, and the prompt and summary
// before it do not count; the i+1-th prompt adds 1.
func TestACompactionRebuildsFromSumsNotByWalkingAgain(t *testing.T) {
	const n = 2000
	b, err := Load(strings.NewReader(manyCompactions(n)))
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	est := b.Estimator(func(pos int, u float64) float64 { calls++; return u })
	for pos := 0; pos < b.Len; pos++ {
		if b.At(pos).Kind == KindAssistant && pos > 1 {
			// The request after compaction i-1 and prompt i: the last
			// answer before it anchors, from the kept entries (stale:
			// unknown, as pi reports it).
			i := pos / 3
			if e := est.Estimate(); e.Tokens != int64(100+i-1+1) || e.AnchorEntry != fmt.Sprintf("a%d", i-1) || !e.Unknown || e.Messages != 2*i+2 {
				t.Fatalf("request %d: %+v, want %d tokens anchored on a%d, unknown, %d messages", i, e, 100+i, i-1, 2*i+2)
			}
		}
		est.Advance()
	}
	if f := est.Estimate(); f.Tokens != 100+n-1 || !f.Unknown || f != b.Final {
		t.Errorf("final %+v, want %d, unknown, as Branch.Final %+v", f, 100+n-1, b.Final)
	}
	if calls > 4*n {
		t.Errorf("%d usages asked for over %d answers and %d compactions: the kept entries are walked again at each compaction", calls, n, n)
	}
}

func BenchmarkReadEndManyCompactions(b *testing.B) {
	file := manyCompactions(20000)
	b.SetBytes(int64(len(file)))
	for b.Loop() {
		if _, err := ReadEnd(strings.NewReader(file)); err != nil {
			b.Fatal(err)
		}
	}
}
