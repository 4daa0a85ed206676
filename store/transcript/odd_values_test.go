package transcript

import (
	"strings"
	"testing"
)

// A value pi's estimateTokens measures and cannot (absent, null, a number
// where it takes .length, a null block) leaves pi no reading, in each role
// and block that measures it; the same message with values pi can measure
// is counted. A usage whose totalTokens is an object or an array sums to a
// string in pi's arithmetic: no reading either.
func TestReadEndHasNoReadingWherePiCannotMeasureAValue(t *testing.T) {
	const msg = `{"type":"message","id":"b","parentId":"a1","message":`
	for _, c := range []struct {
		line string
		want int64 // -1: no reading
	}{
		{msg + `{"role":"bashExecution","output":"x"}}`, -1},             // command absent: TypeError
		{msg + `{"role":"bashExecution","command":5,"output":"x"}}`, -1}, // NaN
		{msg + `{"role":"bashExecution","command":"ls","output":"abcd"}}`, 102},
		{msg + `{"role":"branchSummary"}}`, -1}, // summary absent: TypeError
		{msg + `{"role":"branchSummary","summary":"abcd"}}`, 101},
		{msg + `{"role":"assistant","content":[null],"stopReason":"error"}}`, -1},                             // TypeError
		{msg + `{"role":"assistant","content":[{"type":"text"}],"stopReason":"error"}}`, -1},                  // TypeError
		{msg + `{"role":"assistant","content":[{"type":"text","text":5}],"stopReason":"error"}}`, -1},         // NaN
		{msg + `{"role":"assistant","content":[{"type":"thinking"}],"stopReason":"error"}}`, -1},              // TypeError
		{msg + `{"role":"assistant","content":[{"type":"thinking","thinking":5}],"stopReason":"error"}}`, -1}, // NaN
		{msg + `{"role":"assistant","content":[{"type":"thinking","thinking":"abcd"}],"stopReason":"error"}}`, 101},
		{msg + `{"role":"assistant","content":[{"type":"toolCall","arguments":{}}],"stopReason":"error"}}`, -1}, // name absent: TypeError
		{msg + `{"role":"toolResult","content":[null]}}`, -1},                                                   // TypeError
		{msg + `{"role":"toolResult","content":[{"type":"text","text":"abcd"}]}}`, 101},
		{msg + `{"role":"assistant","content":[],"usage":{"input":1,"output":1,"cacheRead":1,"cacheWrite":1,"totalTokens":{}},"stopReason":"stop"}}`, -1},
		{msg + `{"role":"assistant","content":[],"usage":{"input":1,"output":1,"cacheRead":1,"cacheWrite":1,"totalTokens":[]},"stopReason":"stop"}}`, -1},
		{msg + `{"role":"assistant","content":[],"usage":{"input":1,"output":1,"cacheRead":1,"cacheWrite":1,"totalTokens":0},"stopReason":"stop"}}`, 4},
	} {
		file := strings.Join([]string{
			`{"type":"session","version":3,"id":"s","timestamp":"2026-03-10T09:14:55.120Z","cwd":"/w"}`,
			`{"type":"message","id":"u0","parentId":null,"timestamp":"t","message":{"role":"user","content":"hi"}}`,
			`{"type":"message","id":"a1","parentId":"u0","timestamp":"t","message":{"role":"assistant","content":[],"provider":"p","model":"m","usage":{"totalTokens":100},"stopReason":"stop"}}`,
			c.line, ""}, "\n")
		end, err := ReadEnd(strings.NewReader(file))
		if err != nil {
			t.Fatalf("%s: %v", c.line, err)
		}
		switch {
		case c.want < 0 && end.Known:
			t.Errorf("%s: reading %d tokens, want none (pi's is no number)", c.line, end.Tokens)
		case c.want >= 0 && (!end.Known || end.Tokens != c.want):
			t.Errorf("%s: reading %d tokens (known %v), want pi's %d", c.line, end.Tokens, end.Known, c.want)
		}
	}
}

// At a leaf whose id is falsy pi reports its estimate, stale or not: a
// compaction there that keeps nothing, whose summary pi cannot measure
// (absent, a number), leaves it none; one it can is counted. Where it keeps
// an anchor, the summary comes before the anchor and is not counted.
func TestAFalsyLeafCompactionPiCannotMeasureHasNoReading(t *testing.T) {
	for _, c := range []struct {
		summary string // the member as written, "" for none
		kept    string // firstKeptEntryId's member as written, "" for none
		known   bool
	}{
		{``, ``, false},
		{`"summary":5,`, ``, false},
		{`"summary":"ssss",`, ``, true},
		{``, `"firstKeptEntryId":"u0",`, true},
		{`"summary":5,`, `"firstKeptEntryId":"u0",`, true},
	} {
		file := strings.Join([]string{
			`{"type":"session","version":3,"id":"s","timestamp":"2026-03-10T09:14:55.120Z","cwd":"/w"}`,
			`{"type":"message","id":"u0","parentId":null,"timestamp":"t","message":{"role":"user","content":"hi"}}`,
			`{"type":"message","id":"a1","parentId":"u0","timestamp":"t","message":{"role":"assistant","content":[],"provider":"p","model":"m","usage":{"totalTokens":100},"stopReason":"stop"}}`,
			`{"type":"compaction","id":"","parentId":"a1",` + c.summary + c.kept + `"tokensBefore":1}`, ""}, "\n")
		end, err := ReadEnd(strings.NewReader(file))
		if err != nil {
			t.Fatalf("%s: %v", c.summary, err)
		}
		if end.Known != c.known {
			t.Errorf("summary %q, kept %q: reading %d tokens, known %v; want known %v", c.summary, c.kept, end.Tokens, end.Known, c.known)
		}
	}
}

// Tool-call arguments nested past what pi's JSON.stringify can measure
// leave pi no count of their message only: a tool call after it, in a
// later line, is measured.
func TestADeepToolCallLeavesTheNextOneMeasured(t *testing.T) {
	deep := strings.Repeat("[", stringifyDepth+100) + strings.Repeat("]", stringifyDepth+100)
	file := strings.Join([]string{
		`{"type":"session","version":3,"id":"s","timestamp":"2026-03-10T09:14:55.120Z","cwd":"/w"}`,
		`{"type":"message","id":"u0","parentId":null,"timestamp":"t","message":{"role":"user","content":"hi"}}`,
		`{"type":"message","id":"d","parentId":"u0","timestamp":"t","message":{"role":"assistant","content":[{"type":"toolCall","name":"x","arguments":` + deep + `}],"stopReason":"error"}}`,
		`{"type":"message","id":"a1","parentId":"d","timestamp":"t","message":{"role":"assistant","content":[],"provider":"p","model":"m","usage":{"totalTokens":100},"stopReason":"stop"}}`,
		`{"type":"message","id":"b","parentId":"a1","timestamp":"t","message":{"role":"assistant","content":[{"type":"toolCall","name":"x","arguments":{}}],"stopReason":"error"}}`,
		""}, "\n")
	end, err := ReadEnd(strings.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	if !end.Known || end.Tokens != 101 {
		t.Errorf("reading %d tokens (known %v), want pi's 101: the tool call after the deep one measured", end.Tokens, end.Known)
	}
}

// Arguments nested up to stringifyDepth arrays deep, a number at the
// bottom, are measured: only an array or object past it may overflow
// pi's stack, never the scalar a nest that deep holds.
func TestAScalarAtTheDepthLimitIsMeasured(t *testing.T) {
	args := strings.Repeat("[", stringifyDepth) + "1" + strings.Repeat("]", stringifyDepth)
	file := strings.Join([]string{
		`{"type":"session","version":3,"id":"s","timestamp":"2026-03-10T09:14:55.120Z","cwd":"/w"}`,
		`{"type":"message","id":"u0","parentId":null,"timestamp":"t","message":{"role":"user","content":"hi"}}`,
		`{"type":"message","id":"a1","parentId":"u0","timestamp":"t","message":{"role":"assistant","content":[],"provider":"p","model":"m","usage":{"totalTokens":100},"stopReason":"stop"}}`,
		`{"type":"message","id":"b","parentId":"a1","timestamp":"t","message":{"role":"assistant","content":[{"type":"toolCall","name":"x","arguments":` + args + `}],"stopReason":"error"}}`,
		""}, "\n")
	end, err := ReadEnd(strings.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	// "x" and JSON.stringify of the arguments: 1 + 2*stringifyDepth + 1.
	if want := 100 + (1+2*stringifyDepth+1+3)/4; !end.Known || end.Tokens != int64(want) {
		t.Errorf("reading %d tokens (known %v), want pi's %d", end.Tokens, end.Known, want)
	}
}
