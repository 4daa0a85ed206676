package transcript

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// piFile is a small transcript pi 0.58.3 loads, and what pi itself reports
// at its end: tools/pi-end-usage.mjs (getContextUsage's tokens, null for
// unknown, and buildSessionContext's model) run on exactly these lines.
type piFile struct {
	name   string
	lines  []string
	tokens int64 // pi's tokens; -1 where pi reports null
	model  string
}

func (c piFile) check(t *testing.T) {
	t.Helper()
	end, err := ReadEnd(strings.NewReader(strings.Join(c.lines, "\n") + "\n"))
	if err != nil || end.Invalid != nil {
		t.Errorf("%s: %v, invalid %v", c.name, err, end.Invalid)
		return
	}
	if c.tokens < 0 && end.Known || c.tokens >= 0 && (!end.Known || end.Tokens != c.tokens) {
		t.Errorf("%s: tokens %d (known %v), pi %d (-1: null)", c.name, end.Tokens, end.Known, c.tokens)
	}
	if end.Model != c.model {
		t.Errorf("%s: model %q, pi %q", c.name, end.Model, c.model)
	}
}

// Lines the cases below share: a user message of 5 characters (2 tokens),
// an answer with usage 1000 and model p/m, and a user message of 40
// characters (10 tokens) after it.
const (
	piU1 = `{"type":"message","id":"u1","parentId":null,"message":{"role":"user","content":"hello"}}`
	piA1 = `{"type":"message","id":"a1","parentId":"u1","message":{"role":"assistant","content":[],"provider":"p","model":"m","usage":{"totalTokens":1000},"stopReason":"stop"}}`
	piU2 = `{"type":"message","id":"u2","parentId":"a1","message":{"role":"user","content":"zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz"}}`
)

// pi's _buildIndex and getEntries skip every {"type":"session"} line, not
// only the header: one appended after the entries is not the leaf, and one
// in the middle is no entry a parentId can reach.
func TestPiSkipsSessionLines(t *testing.T) {
	for _, c := range []piFile{
		{"a session line last", []string{hdr, piU1, piA1, piU2, `{"type":"session","version":3,"id":"s2","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}`}, 1010, "p/m"},
		{"a session line as a parent", []string{hdr, piU1, piA1, `{"type":"session","id":"x","parentId":"a1"}`,
			`{"type":"message","id":"u2","parentId":"x","message":{"role":"user","content":"zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz"}}`}, 10, ""},
		{"version 1: a session line last", []string{`{"type":"session","id":"s"}`,
			`{"type":"message","message":{"role":"user","content":"aaaaaaaa"}}`,
			`{"type":"message","message":{"role":"assistant","content":[],"provider":"p","model":"m","usage":{"totalTokens":1000},"stopReason":"stop"}}`,
			`{"type":"session","id":"zz"}`}, 1000, "p/m"},
	} {
		c.check(t)
	}
}

// pi compares the header's version with `version < 2` and `version < 3`
// after `?? 1`, which coerce it by JavaScript's ToNumber: "1", true, false
// and [] migrate a file from version 1 (the tree flattens into one chain),
// "2" and [[2]] from version 2 (a hookMessage becomes custom), and a value
// that reads as NaN migrates nothing. The file: an answer, then two
// children of it, a user message of 16 characters and a hookMessage of 32;
// the second is the leaf. As version 1 both are on the chain (1012), as
// version 2 the hookMessage counts (1008), as version 3 its role counts 0.
func TestPiCoercesTheVersion(t *testing.T) {
	for _, c := range []struct {
		version string
		tokens  int64
	}{
		{`"1"`, 1012}, {`true`, 1012}, {`false`, 1012}, {`[]`, 1012}, {`" 0b1 "`, 1012},
		{`"2"`, 1008}, {`[[2]]`, 1008}, {`"0x2"`, 1008},
		{`"\u200b2"`, 1000}, {`{}`, 1000}, {`["1",[]]`, 1000}, {`"3"`, 1000},
	} {
		piFile{"version " + c.version, []string{
			`{"type":"session","version":` + c.version + `,"id":"s","timestamp":"t","cwd":"/"}`,
			`{"type":"message","id":"u1","parentId":null,"message":{"role":"user","content":"aaaaaaaa"}}`,
			`{"type":"message","id":"a1","parentId":"u1","message":{"role":"assistant","content":[{"type":"text","text":"bbbb"}],"provider":"p","model":"m","usage":{"totalTokens":1000},"stopReason":"stop"}}`,
			`{"type":"message","id":"u2","parentId":"a1","message":{"role":"user","content":"cccccccccccccccc"}}`,
			`{"type":"message","id":"h1","parentId":"a1","message":{"role":"hookMessage","content":"dddddddddddddddddddddddddddddddd"}}`,
		}, c.tokens, "p/m"}.check(t)
	}
}

// pi pushes every value JSON.parse returns into its entries (null aside,
// on which its index throws): a number, a string, an array or an object
// without an id is an entry with no id. A parentId never finds one, but
// the last one is the leaf, and buildSessionContext builds the context
// from it: a number has no parent, so the context is empty; an id-less
// message with a parentId is on its own branch. Ids that are not strings
// are keys of pi's byId Map as they are: a number finds the number (5.0
// is 5) but not the string "5", true finds true, an object nothing, and 0
// is falsy, so no walk follows it.
func TestPiKeepsEveryValue(t *testing.T) {
	msg := func(id, parent, text string) string {
		return `{"type":"message","id":` + id + `,"parentId":` + parent + `,"message":{"role":"user","content":"` + text + `"}}`
	}
	c16, d16 := strings.Repeat("c", 16), strings.Repeat("d", 16)
	for _, c := range []piFile{
		{"a number last", []string{hdr, piU1, piA1, piU2, `42`}, 0, ""},
		{"an empty object last", []string{hdr, piU1, piA1, piU2, `{}`}, 0, ""},
		{"values between entries", []string{hdr, piU1, `42`, piA1, `[1,2]`, `"str"`, `true`, `false`, piU2}, 1010, "p/m"},
		{"an id-less message last", []string{hdr, piU1, piA1, `{"type":"message","parentId":"a1","message":{"role":"user","content":"` + c16 + `"}}`}, 1004, "p/m"},
		{"an id-less message between", []string{hdr, piU1, piA1, `{"type":"message","parentId":"a1","message":{"role":"user","content":"` + c16 + `"}}`, piU2}, 1010, "p/m"},
		{"number ids", []string{hdr, piU1, piA1, msg(`5`, `"a1"`, c16), msg(`6`, `5`, d16)}, 1008, "p/m"},
		{"a number parent finds 5.0", []string{hdr, piU1, piA1, msg(`5`, `"a1"`, c16), msg(`6`, `5.0`, d16)}, 1008, "p/m"},
		{"a number parent does not find a string", []string{hdr, piU1, piA1, msg(`"5"`, `"a1"`, c16), msg(`6`, `5`, d16)}, 4, ""},
		{"true ids", []string{hdr, piU1, piA1, msg(`true`, `"a1"`, c16), msg(`"x"`, `true`, d16)}, 1008, "p/m"},
		{"object ids", []string{hdr, piU1, piA1, msg(`{"k":1}`, `"a1"`, c16), msg(`"x"`, `{"k":1}`, d16)}, 4, ""},
		{"a zero parent", []string{hdr, piU1, piA1, msg(`0`, `"a1"`, c16), msg(`"x"`, `0`, d16)}, 4, ""},
		{"version 1: an array is an entry", []string{`{"type":"session","id":"s"}`,
			`{"type":"message","message":{"role":"user","content":"aaaaaaaa"}}`,
			`{"type":"message","message":{"role":"assistant","content":[],"provider":"p","model":"m","usage":{"totalTokens":1000},"stopReason":"stop"}}`,
			`[1]`, `{"type":"message","message":{"role":"user","content":"aaaaaaaa"}}`}, 1002, "p/m"},
	} {
		c.check(t)
	}
}

// A compaction's firstKeptEntryId is compared with ===, so a number keeps
// from the entry whose id is that number: pi's buildSessionContext gives
// the summary, the user message with id 5 and the answer after it.
func TestPiKeepsFromANumberID(t *testing.T) {
	in := strings.Join([]string{hdr, piU1, piA1,
		`{"type":"message","id":5,"parentId":"a1","message":{"role":"user","content":"cccccccccccccccc"}}`,
		`{"type":"message","id":"a2","parentId":5,"message":{"role":"assistant","content":[],"provider":"p","model":"m","usage":{"totalTokens":1200},"stopReason":"stop"}}`,
		`{"type":"compaction","id":"c1","parentId":"a2","summary":"ssss","firstKeptEntryId":5,"tokensBefore":1200}`,
	}, "\n")
	b, err := Load(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if b.Len != 5 || b.Final.Messages != 3 || !b.Final.Unknown || b.Final.Tokens != 1200 {
		t.Errorf("branch %d, %+v; want 5 entries and pi's 3 messages, 1200 tokens, unknown", b.Len, b.Final)
	}
}

// pi's leafId is the last entry's id. Where it is falsy (absent, "", 0,
// false), buildSessionContext falls back to the last entry, the same one,
// but getBranch() returns nothing, so getContextUsage's guard finds no
// compaction and reports the stale estimate after one. Where it is null,
// buildSessionContext reads it as "before the first entry": an empty
// context and no model. A truthy id (a string, an object) keeps the guard.
func TestPiLeafWithAFalsyID(t *testing.T) {
	compacted := []string{hdr, piU1, piA1, piU2,
		`{"type":"message","id":"a2","parentId":"u2","message":{"role":"assistant","content":[],"provider":"p","model":"m","usage":{"totalTokens":1200},"stopReason":"stop"}}`,
		`{"type":"compaction","id":"c1","parentId":"a2","summary":"ssssssss","firstKeptEntryId":"u2","tokensBefore":1200}`,
	}
	leaf := func(line string) []string { return append(slices.Clip(compacted), line) }
	for _, c := range []piFile{
		{`id ""`, leaf(`{"type":"label","id":"","parentId":"c1"}`), 1200, "p/m"},
		{"no id", leaf(`{"type":"label","parentId":"c1"}`), 1200, "p/m"},
		{"id 0", leaf(`{"type":"label","id":0,"parentId":"c1"}`), 1200, "p/m"},
		{"id false", leaf(`{"type":"label","id":false,"parentId":"c1"}`), 1200, "p/m"},
		{`a message with id ""`, leaf(`{"type":"message","id":"","parentId":"c1","message":{"role":"user","content":"qqqqqqqq"}}`), 1202, "p/m"},
		{"id null", leaf(`{"type":"label","id":null,"parentId":"c1"}`), 0, ""},
		{`id "x"`, leaf(`{"type":"label","id":"x","parentId":"c1"}`), -1, "p/m"},
		{"id {}", leaf(`{"type":"label","id":{},"parentId":"c1"}`), -1, "p/m"},
	} {
		c.check(t)
	}
}

// pi adds the usage counters as JavaScript numbers: totalTokens when it is
// not 0, else input+output+cacheRead+cacheWrite from left to right, then
// the trailing estimate (here 1 token). Counters that are not whole
// numbers give pi's estimate a fraction: Tokens is its floor, and
// Fractional says there is one. Each want is pi's tokens from
// tools/pi-end-usage.mjs, its floor where pi printed a fraction.
func TestPiUsageArithmetic(t *testing.T) {
	answer := func(usage string) string {
		return `{"type":"message","id":"a1","parentId":"u1","message":{"role":"assistant","content":[],"provider":"p","model":"m","usage":` + usage + `,"stopReason":"stop"}}`
	}
	u2 := `{"type":"message","id":"u2","parentId":"a1","message":{"role":"user","content":"qqqq"}}`
	for _, c := range []struct {
		name, usage string
		tokens      int64
		frac        bool
	}{
		{"halves sum to a whole", `{"input":0.5,"output":0.5,"cacheRead":0,"cacheWrite":0,"totalTokens":0}`, 2, false},                                       // pi 2
		{"0.1+0.2+0.7 in float64", `{"input":0.1,"output":0.2,"cacheRead":0.7,"cacheWrite":0,"totalTokens":0}`, 2, false},                                    // pi 2
		{"a fractional total is not 0", `{"input":100,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0.5}`, 1, true},                                  // pi 1.5
		{"fractional counters", `{"input":100.7,"output":20.2,"cacheRead":3000,"cacheWrite":7,"totalTokens":0}`, 3128, true},                                 // pi 3128.9
		{"a negative fraction", `{"input":-2.5,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0}`, -2, true},                                          // pi -1.5
		{"beyond 2^53, rounded as pi rounds", `{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":9007199254740993}`, 9007199254740992, false}, // pi 9007199254740992
		{"beyond 2^62, clamped", `{"totalTokens":1e300}`, 1 << 62, false},                                                                                    // pi 1e+300
	} {
		b, err := Load(strings.NewReader(strings.Join([]string{hdr, piU1, answer(c.usage), u2}, "\n")))
		if err != nil {
			t.Fatal(err)
		}
		if f := b.Final; f.Tokens != c.tokens || f.Fractional != c.frac || f.Unknown {
			t.Errorf("%s: %+v; want %d, fractional %v", c.name, f, c.tokens, c.frac)
		}
	}
	// The guard after a compaction asks whether the fresh usage is > 0:
	// 0.5 is (pi 1.5, known).
	b, err := Load(strings.NewReader(strings.Join([]string{hdr, piU1, answer(`{"totalTokens":5000}`),
		`{"type":"compaction","id":"c1","parentId":"a1","summary":"ssss","firstKeptEntryId":"a1","tokensBefore":5000}`,
		`{"type":"message","id":"a2","parentId":"c1","message":{"role":"assistant","content":[],"provider":"p","model":"m","usage":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0.5},"stopReason":"stop"}}`,
		`{"type":"message","id":"u2","parentId":"a2","message":{"role":"user","content":"qqqq"}}`}, "\n")))
	if err != nil {
		t.Fatal(err)
	}
	if f := b.Final; f.Unknown || f.Tokens != 1 || !f.Fractional {
		t.Errorf("a fresh usage of 0.5 after a compaction: %+v; want pi's 1.5, known", f)
	}
}

// A tool call counts its name and JSON.stringify(arguments).length, of the
// value JSON.parse read: escapes, number forms and repeated keys as written
// do not count. A user message of one character (1 token) and an answer
// with one bash call and no usage: the estimate is 1 + ceil((4 + n)/4).
func TestPiToolCallArguments(t *testing.T) {
	for _, c := range []struct {
		args   string
		tokens int64
	}{
		{`{"command":"ls \u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9"}`, 9}, // {"command":"ls éééééééé"}, 25
		{`{"p":"\/a\/b\/c\/d\/e\/f\/g\/h\/i\/j"}`, 9},                            // 28
		{`{"n":1.000000,"m":2.50000,"z":-0,"q":0.100000}`, 10},                   // {"n":1,"m":2.5,"z":0,"q":0.1}, 29
		{`{"k":"aaaaaaaaaaaaaaaaaaaaaaa","k":"b"}`, 5},                           // {"k":"b"}, 9
		{`{"e":1E+2,"f":1e-10,"g":1.5E300}`, 10},                                 // {"e":100,"f":1e-10,"g":1.5e+300}, 32
		{`{"s":"\u007f\u0080\ud83d\ude00\ud800"}`, 7},                            // a lone surrogate is written escaped, 18
		{`null`, 3},
		{`"just a string \u00e9"`, 7},
		{`{"a" : [1, 2.0, {"b":"\u0001\n"}]}`, 9}, // {"a":[1,2,{"b":"\u0001\n"}]}, 28
	} {
		piFile{c.args, []string{hdr,
			`{"type":"message","id":"u1","parentId":null,"message":{"role":"user","content":"a"}}`,
			`{"type":"message","id":"a1","parentId":"u1","message":{"role":"assistant","content":[{"type":"toolCall","id":"x","name":"bash","arguments":` + c.args + `}],"provider":"p","model":"m","stopReason":"toolUse"}}`,
		}, c.tokens, "p/m"}.check(t)
	}
}

// JSON.parse nests without a limit (V8's parser is iterative), so pi keeps
// a line whatever its depth; only encoding/json stops at 10000. A user
// message after the answer, carrying an extension's field nested 10001 or
// 20000 deep, is the leaf: pi's estimate is the answer's 1000 plus the
// message's "zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz" (40 characters, 10
// tokens). A deep line in the middle is the parent of the next one, which
// a dropped line would cut from the branch: a failed answer after it
// adds its "bbbb" (1 token) to 1010. Tool-call arguments that deep
// make pi's JSON.stringify overflow its stack (a RangeError: pi cannot
// estimate that context at all); here they only have to be read without
// recursing to their depth.
func TestPiKeepsDeeplyNestedLines(t *testing.T) {
	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	deepObj := func(n int) string { return strings.Repeat(`{"a":`, n) + "1" + strings.Repeat("}", n) }
	u2 := func(extra string) string {
		return `{"type":"message","id":"u2","parentId":"a1","x":` + extra + `,"message":{"role":"user","content":"zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz"}}`
	}
	for _, c := range []piFile{
		{"10001 deep, last", []string{hdr, piU1, piA1, u2(deep(10001))}, 1010, "p/m"},
		{"20000 deep objects, last", []string{hdr, piU1, piA1, u2(deepObj(20000))}, 1010, "p/m"},
		{"10001 deep, a parent", []string{hdr, piU1, piA1, u2(deep(10001)),
			`{"type":"message","id":"a2","parentId":"u2","message":{"role":"assistant","content":[{"type":"text","text":"bbbb"}],"provider":"q","model":"n","stopReason":"error"}}`}, 1011, "q/n"},
	} {
		c.check(t)
	}
	// Arguments deep, on an errored answer (no anchor, so counted): read,
	// with no stack overflow. pi's JSON.stringify throws from 4174 deep
	// (node 20, pi-end-usage.mjs: RangeError), so there is no reading past
	// stringifyDepth; 3000 deep, pi counts 6000 characters and the name's
	// 1: 1501 tokens, and the prompt's 2 (pi-end-usage.mjs: 1503).
	for _, c := range []struct {
		depth int
		want  int64 // -1: no reading
	}{{100000, -1}, {4174, -1}, {stringifyDepth + 1, -1}, {stringifyDepth, 2 + 1501}} {
		args := strings.Repeat("[", c.depth) + strings.Repeat("]", c.depth)
		end, err := ReadEnd(strings.NewReader(strings.Join([]string{hdr, piU1,
			`{"type":"message","id":"a1","parentId":"u1","message":{"role":"assistant","content":[{"type":"toolCall","name":"x","arguments":` + args + `}],"stopReason":"error"}}`}, "\n")))
		switch {
		case err != nil:
			t.Errorf("arguments %d deep: %v", c.depth, err)
		case c.want < 0 && end.Known:
			t.Errorf("arguments %d deep: a reading of %d tokens where pi throws", c.depth, end.Tokens)
		case c.want >= 0 && (!end.Known || end.Tokens != c.want):
			t.Errorf("arguments %d deep: %d tokens (known %v), want pi's %d", c.depth, end.Tokens, end.Known, c.want)
		}
	}
}

// pi measures a text, a thinking, a tool call's name, a bash execution's
// command and output and a summary by their .length, which an array has
// too: its number of elements (nested ones count one each). Each case
// follows piU1 and piA1 (1000), so pi's figure is 1000 plus the last
// message's ceil(chars/4): a user text of 9 elements (3 tokens); a tool
// result text of 5 (2); a failed answer with a text of 5, a thinking of 4
// and a tool call named by 3 with arguments {} (2 characters), 14 in all
// (4); a branch summary of 9 (3); a bash execution of 5 and 1 (2); a custom
// message text of 9 (3); a branchSummary message of 13 (4). A branch
// summary that is an empty array is truthy, so pi makes it a message, of
// 0 tokens: the last message of the branch.
func TestPiMeasuresArraysByTheirLength(t *testing.T) {
	nine := `[1,2,3,4,5,6,7,8,9]`
	for _, c := range []piFile{
		{"user text", []string{hdr, piU1, piA1, `{"type":"message","id":"u2","parentId":"a1","message":{"role":"user","content":[{"type":"text","text":` + nine + `}]}}`}, 1003, "p/m"},
		{"tool result text", []string{hdr, piU1, piA1, `{"type":"message","id":"t1","parentId":"a1","message":{"role":"toolResult","content":[{"type":"text","text":[[],{},"abc",null,5]}]}}`}, 1002, "p/m"},
		{"failed answer", []string{hdr, piU1, piA1, `{"type":"message","id":"a2","parentId":"a1","message":{"role":"assistant","content":[{"type":"text","text":[1,2,3,4,5]},{"type":"thinking","thinking":[1,2,3,4]},{"type":"toolCall","name":[1,2,3],"arguments":{}}],"provider":"p","model":"m","stopReason":"error"}}`}, 1004, "p/m"},
		{"branch summary", []string{hdr, piU1, piA1, `{"type":"branch_summary","id":"b1","parentId":"a1","fromId":"x","summary":` + nine + `}`}, 1003, "p/m"},
		{"bash execution", []string{hdr, piU1, piA1, `{"type":"message","id":"b1","parentId":"a1","message":{"role":"bashExecution","command":[1,2,3,4,5],"output":["abcdefgh"]}}`}, 1002, "p/m"},
		{"custom message", []string{hdr, piU1, piA1, `{"type":"custom_message","id":"c1","parentId":"a1","customType":"x","content":[{"type":"text","text":` + nine + `}],"display":true}`}, 1003, "p/m"},
		{"summary role", []string{hdr, piU1, piA1, `{"type":"message","id":"s1","parentId":"a1","message":{"role":"branchSummary","summary":[1,2,3,4,5,6,7,8,9,10,11,12,13]}}`}, 1004, "p/m"},
	} {
		c.check(t)
	}
	empty := piFile{"empty branch summary", []string{hdr, piU1, piA1, `{"type":"branch_summary","id":"b1","parentId":"a1","fromId":"x","summary":[]}`}, 1000, "p/m"}
	empty.check(t)
	end, err := ReadEnd(strings.NewReader(strings.Join(empty.lines, "\n")))
	if err != nil || end.Last.Role != "branchSummary" || end.Last.Entry != "b1" || end.Last.Shape() != Unanswered {
		t.Errorf("%s: last message %+v (%v), want b1, a branchSummary", empty.name, end.Last, err)
	}
}

// pi matches ids (and a tool call's repeated argument keys) as the
// JavaScript strings Node decodes: UTF-16 code units, with each ill-formed
// UTF-8 sequence read as U+FFFD and an escaped surrogate kept as that one
// code unit. So the raw bytes a\xff and a\xfe, and an escaped \ufffd, are
// one id, the same string; while \ud800 and \udc00 are two, neither of
// them U+FFFD, and an escaped pair is the character written raw. The
// answer's id is the first, the leaf's parentId the second: where pi finds
// the answer its figure is 1000 plus the leaf's 40 characters (1010, model
// p/m), else the leaf alone (10, no model). For the keys, a failed answer
// calls "x" with the arguments, and pi's figure is 2 (piU1) plus
// ceil((1 + JSON.stringify(arguments).length)/4): {"a\ufffd":22} is 9
// characters (5); {"\ud800":1,"\udc00":2} keeps both, each written as a
// six-character escape, 23 (8); {"\ud800":1,"\ufffd":2} is 18 (7).
func TestPiMatchesIDsAsJavaScriptStrings(t *testing.T) {
	answer := func(id string) string {
		return `{"type":"message","id":"` + id + `","parentId":"u1","message":{"role":"assistant","content":[],"provider":"p","model":"m","usage":{"totalTokens":1000},"stopReason":"stop"}}`
	}
	leaf := func(parent string) string {
		return `{"type":"message","id":"u2","parentId":"` + parent + `","message":{"role":"user","content":"zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz"}}`
	}
	for _, c := range []struct {
		id, parent string
		found      bool
	}{
		{"a\xff", "a\xfe", true},
		{"a\xff", `a\ufffd`, true},
		{"a\xff", "a\uFFFD", true},
		{"a\xed\xa0\x80", "a\uFFFD\uFFFD\uFFFD", true}, // an encoded surrogate is ill-formed: three U+FFFD
		{`a\ud800`, `a\ud800`, true},
		{`a\ud83d\ude00`, "a\U0001F600", true},
		{`a\ud800`, `a\udc00`, false},
		{`a\ud800`, "a\uFFFD", false},
		{`a\ud800`, "a\xed\xa0\x80", false},
	} {
		want := piFile{fmt.Sprintf("id %q, parentId %q", c.id, c.parent), []string{hdr, piU1, answer(c.id), leaf(c.parent)}, 10, ""}
		if c.found {
			want.tokens, want.model = 1010, "p/m"
		}
		want.check(t)
	}
	call := func(args string) string {
		return `{"type":"message","id":"a1","parentId":"u1","message":{"role":"assistant","content":[{"type":"toolCall","name":"x","arguments":` + args + `}],"provider":"p","model":"m","stopReason":"error"}}`
	}
	for _, c := range []struct {
		args   string
		tokens int64
	}{
		{"{\"a\xff\":1,\"a\xfe\":22}", 5},
		{`{"\ud800":1,"\udc00":2}`, 8},
		{`{"\ud800":1,"\ufffd":2}`, 7},
		{"{\"\\ud83d\\ude00\":1,\"\U0001F600\":2}", 5},
	} {
		piFile{"arguments " + c.args, []string{hdr, piU1, call(c.args)}, c.tokens, "p/m"}.check(t)
	}
}

// The model is the string pi holds, as far as UTF-8 can write it: Node
// decodes an ill-formed UTF-8 sequence (a truncated one too, which Go's
// decoder would read as one U+FFFD a byte) as one U+FFFD, so pi's model
// is "m\uFFFD" (pi-end-usage.mjs prints p/m\uFFFD for each). A lone
// escaped surrogate, which pi keeps as such, has no UTF-8 form: it reads
// U+FFFD, as JSON output would write it.
func TestPiModelIsTheStringPiHolds(t *testing.T) {
	answer := func(model string) string {
		return `{"type":"message","id":"a1","parentId":"u1","message":{"role":"assistant","content":[],"provider":"p","model":"` + model + `","usage":{"totalTokens":1000},"stopReason":"stop"}}`
	}
	for _, c := range []struct{ model, want string }{
		{"m\xe2\x82", "p/m\uFFFD"},
		{"m\xff", "p/m\uFFFD"},
		{"m\xed\xa0\x80", "p/m\uFFFD\uFFFD\uFFFD"},
		{`m\ud83d\ude00`, "p/m\U0001F600"},
		{`m\ud800`, "p/m\uFFFD"},
		{"m\u00e9", "p/m\u00e9"},
	} {
		piFile{"model " + c.model, []string{hdr, piU1, answer(c.model)}, 1000, c.want}.check(t)
	}
	mc := piFile{"model_change", []string{hdr, piU1, piA1, `{"type":"model_change","id":"m1","parentId":"a1","provider":"q` + "\xe2\x82" + `","modelId":"n"}`}, 1000, "q\uFFFD/n"}
	mc.check(t)
}

// After a compaction pi's getContextUsage asks whether the latest valid
// assistant has calculateContextTokens(usage) > 0 (the guard of
// tools/pi-end-usage.mjs): one whose usage is all zeros leaves the
// estimate unknown, an earlier one with a usage notwithstanding; an
// aborted one is passed over (mutation sweep: Unknown's `fresh &&
// freshUsed` made `||`, and the guard's `> 0` made `> -1`, each took a
// zero usage for a fresh one; the tests' fresh usages were not 0). Each
// want is pi 0.58.3's, from tools/pi-end-usage.mjs on these lines.
func TestPiZeroUsageAfterACompactionIsUnknown(t *testing.T) {
	answer := func(id, parent, usage, stop string) string {
		return `{"type":"message","id":"` + id + `","parentId":"` + parent + `","message":{"role":"assistant","content":[],"provider":"p","model":"m","usage":` + usage + `,"stopReason":"` + stop + `"}}`
	}
	zero := `{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0}`
	comp := `{"type":"compaction","id":"c1","parentId":"a1","summary":"ssss","firstKeptEntryId":"a1","tokensBefore":1000}`
	u3 := `{"type":"message","id":"u3","parentId":"a3","message":{"role":"user","content":"qqqq"}}`
	for _, c := range []piFile{
		{"a zero usage after it", []string{hdr, piU1, piA1, comp, answer("a3", "c1", zero, "stop"), u3}, -1, "p/m"},
		{"a usage, then a zero usage", []string{hdr, piU1, piA1, comp, answer("a2", "c1", `{"totalTokens":700}`, "stop"), answer("a3", "a2", zero, "stop"), u3}, -1, "p/m"},
		{"a zero usage, then an aborted one with a usage", []string{hdr, piU1, piA1, comp, answer("a2", "c1", zero, "stop"), answer("a3", "a2", `{"totalTokens":700}`, "aborted"), u3}, -1, "p/m"},
		// Known: 700 + ceil(4/4).
		{"a usage after it", []string{hdr, piU1, piA1, comp, answer("a3", "c1", `{"totalTokens":700}`, "stop"), u3}, 701, "p/m"},
	} {
		c.check(t)
	}
}

// An assistant's node carries the prompt the provider billed,
// input+cacheRead+cacheWrite (output not in it), and the estimate names
// the entry it anchors on, none when nothing anchors (mutation sweep:
// reduce's Prompt assignment and Estimate's AnchorEntry assignment
// deleted survived this package's tests; engage's replay reads Prompt
// only with pi's fixtures in reach).
func TestBranchPromptAndAnchorEntry(t *testing.T) {
	a1 := `{"type":"message","id":"a1","parentId":"u1","message":{"role":"assistant","content":[],"provider":"p","model":"m","usage":{"input":100,"output":20,"cacheRead":3000,"cacheWrite":7,"totalTokens":3127},"stopReason":"stop"}}`
	u2 := `{"type":"message","id":"u2","parentId":"a1","message":{"role":"user","content":"qqqq"}}`
	b, err := Load(strings.NewReader(strings.Join([]string{hdr, piU1, a1, u2}, "\n")))
	if err != nil {
		t.Fatal(err)
	}
	if n := b.At(1); n.ID != "a1" || n.Usage != 3127 || n.Prompt != 3107 {
		t.Errorf("At(1) = %+v; want a1, usage 3127, prompt 3107", n)
	}
	if n := b.At(0); n.Prompt != 0 {
		t.Errorf("At(0) = %+v; want no prompt for a user message", n)
	}
	if f := b.Final; f.AnchorEntry != "a1" || f.Anchor != 3127 || f.Tokens != 3128 {
		t.Errorf("Final = %+v; want anchored on a1, 3127 + 1", f)
	}
	b, err = Load(strings.NewReader(strings.Join([]string{hdr, piU1}, "\n")))
	if err != nil {
		t.Fatal(err)
	}
	if f := b.Final; f.AnchorEntry != "" || f.Tokens != 2 {
		t.Errorf("Final with no answer = %+v; want no anchor, 2 tokens", f)
	}
}

// JSON.parse decodes every escape and keeps the last of a repeated key, so
// a block's type escaped from its first byte is still "text", a type
// given again as a number is no type, and a provider and model escaped
// from their first byte are "p" and "m" (mutation sweep: the block's
// `typ = nil` on a repeated type deleted, and the unescape checks'
// `IndexByte(…, '\\') >= 0` made `>= 1` or `> 0` in block and in
// names.text, each survived: the tests' escapes were never first).
// Each want is pi 0.58.3's, from tools/pi-end-usage.mjs on these lines.
func TestPiReadsTypesAndNamesAsJSONParseDoes(t *testing.T) {
	user := func(content string) string {
		return `{"type":"message","id":"u1","parentId":null,"message":{"role":"user","content":` + content + `}}`
	}
	for _, c := range []piFile{
		// 8 characters of text: 2 tokens, or none when the type is no "text".
		{"a type escaped from its first byte", []string{hdr, user(`[{"type":"\u0074ext","text":"abcdefgh"}]`)}, 2, ""},
		{"a type given again as a number", []string{hdr, user(`[{"type":"text","type":5,"text":"abcdefgh"}]`)}, 0, ""},
		{"a type given again as text", []string{hdr, user(`[{"type":5,"type":"text","text":"abcdefgh"}]`)}, 2, ""},
		{"a provider and model escaped from their first byte", []string{hdr, piU1,
			`{"type":"message","id":"a1","parentId":"u1","message":{"role":"assistant","content":[],"provider":"\u0070","model":"\u006d","usage":{"totalTokens":1000},"stopReason":"stop"}}`}, 1000, "p/m"},
	} {
		c.check(t)
	}
}
