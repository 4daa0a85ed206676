package engage

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// Rules of pi's estimate that the fixtures do not reach, each on a small
// synthetic transcript. Token counts are worked out in the comments.

const v3 = `{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}`

func msgLine(id, parent, message string) string {
	p := "null"
	if parent != "" {
		p = `"` + parent + `"`
	}
	return fmt.Sprintf(`{"type":"message","id":%q,"parentId":%s,"message":%s}`, id, p, message)
}

func asst(usage int, stop string) string {
	return fmt.Sprintf(`{"role":"assistant","content":[{"type":"text","text":"abcd"}],"usage":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":%d},"stopReason":%q}`, usage, stop)
}

func read(t *testing.T, lines ...string) *Transcript {
	t.Helper()
	tr, err := Read(strings.NewReader(strings.Join(lines, "\n")))
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// getContextUsage after a compaction looks at the latest assistant that is
// not an error or aborted: a zero usage there is still unknown, an error
// after a good one does not hide the good one.
func TestNullRuleAfterCompaction(t *testing.T) {
	comp := `{"type":"compaction","id":"c","parentId":"a1","summary":"12345678","firstKeptEntryId":"a1"}`
	base := []string{v3, msgLine("u1", "", `{"role":"user","content":"hi"}`), msgLine("a1", "u1", asst(5000, "stop")), comp}
	cases := []struct {
		name    string
		after   []string
		unknown bool
	}{
		{"nothing after", nil, true},
		{"a fresh usage", []string{msgLine("a2", "c", asst(300, "stop"))}, false},
		{"a zero usage", []string{msgLine("a2", "c", asst(0, "stop"))}, true},
		{"a fresh usage, then a zero one", []string{msgLine("a2", "c", asst(300, "stop")), msgLine("a3", "a2", asst(0, "toolUse"))}, true},
		{"a fresh usage, then an error", []string{msgLine("a2", "c", asst(300, "stop")), msgLine("a3", "a2", asst(0, "error"))}, false},
		{"only an aborted one", []string{msgLine("a2", "c", asst(300, "aborted"))}, true},
	}
	for _, c := range cases {
		tr := read(t, append(append([]string{}, base...), c.after...)...)
		if tr.Final.Unknown != c.unknown {
			t.Errorf("%s: unknown = %v, want %v (%+v)", c.name, tr.Final.Unknown, c.unknown, tr.Final)
		}
	}
}

// A compaction whose firstKeptEntryId is not found before it keeps nothing:
// the context is the summary and what follows. Kept: summary (8 chars, 2
// tokens), then a1 anchors at 5000, then u2 "xxxx" adds 1.
func TestCompactionKeeps(t *testing.T) {
	for _, c := range []struct {
		firstKept string
		tokens    int64
		messages  int
	}{
		{"u1", 5001, 4},   // summary, u1, a1, u2: anchor a1 + u2
		{"a1", 5001, 3},   // summary, a1, u2
		{"nowhere", 3, 2}, // summary (2) + u2 (1), nothing anchors
		{"u2", 3, 2},      // after the compaction: not found before it
		{"", 3, 2},        // no id at all
	} {
		comp := fmt.Sprintf(`{"type":"compaction","id":"c","parentId":"a1","summary":"12345678","firstKeptEntryId":%q}`, c.firstKept)
		tr := read(t, v3, msgLine("u1", "", `{"role":"user","content":"hi"}`), msgLine("a1", "u1", asst(5000, "stop")), comp,
			msgLine("u2", "c", `{"role":"user","content":"xxxx"}`))
		if tr.Final.Tokens != c.tokens || tr.Final.Messages != c.messages {
			t.Errorf("firstKeptEntryId %q: %d tokens in %d messages, want %d in %d", c.firstKept, tr.Final.Tokens, tr.Final.Messages, c.tokens, c.messages)
		}
	}
}

// pi 0.58.3's per-role counts: images count 4800 characters in a tool
// result or custom message, nothing in a user message (EXPECTED.md 12); an
// empty branch summary adds no message; a custom_message counts as "custom";
// thinking counts for an assistant. No anchor, so the estimate is the sum.
func TestRoleCounts(t *testing.T) {
	img := `{"type":"image","data":"AAAA","mimeType":"image/png"}`
	cases := []struct {
		name     string
		entry    string
		tokens   int64
		messages int
	}{
		{"user image: 0", msgLine("x", "", `{"role":"user","content":[{"type":"text","text":"abcd"},`+img+`]}`), 1, 1},
		{"toolResult image: 1200", msgLine("x", "", `{"role":"toolResult","content":[{"type":"text","text":"abcd"},`+img+`]}`), 1201, 1},
		{"custom_message image: 1200", `{"type":"custom_message","id":"x","parentId":null,"customType":"t","content":[` + img + `],"display":true}`, 1200, 1},
		{"custom_message string", `{"type":"custom_message","id":"x","parentId":null,"customType":"t","content":"abcdefgh","display":false}`, 2, 1},
		{"empty branch summary", `{"type":"branch_summary","id":"x","parentId":null,"fromId":"root","summary":""}`, 0, 0},
		{"branch summary", `{"type":"branch_summary","id":"x","parentId":null,"fromId":"root","summary":"abcde"}`, 2, 1},
		{"assistant thinking, no usage", msgLine("x", "", `{"role":"assistant","content":[{"type":"thinking","thinking":"abcdefghi"}],"stopReason":"stop"}`), 3, 1},
		{"assistant string content: 0", msgLine("x", "", `{"role":"assistant","content":"abcdefgh","stopReason":"stop"}`), 0, 1},
		{"bashExecution", msgLine("x", "", `{"role":"bashExecution","command":"ls","output":"abcdef","exitCode":0}`), 2, 1},
		{"an unknown role: a message of 0", msgLine("x", "", `{"role":"system","content":"abcdefgh"}`), 0, 1},
		{"a v3 hookMessage is not migrated: 0", msgLine("x", "", `{"role":"hookMessage","content":"abcdefgh"}`), 0, 1},
		{"a label adds nothing", `{"type":"label","id":"x","parentId":null,"targetId":"y","label":"abcdefgh"}`, 0, 0},
	}
	for _, c := range cases {
		tr := read(t, v3, c.entry)
		if tr.Final.Tokens != c.tokens || tr.Final.Messages != c.messages || tr.Final.AnchorEntry != "" {
			t.Errorf("%s: %d tokens in %d messages, want %d in %d", c.name, tr.Final.Tokens, tr.Final.Messages, c.tokens, c.messages)
		}
	}
}

// The anchor value: totalTokens, or the four counters when it is 0 or
// missing; a usage of all zeros still anchors in 0.58.3.
func TestAnchorValue(t *testing.T) {
	for usage, want := range map[string]int64{
		`{"input":1,"output":2,"cacheRead":3,"cacheWrite":4,"totalTokens":100}`: 100,
		`{"input":1,"output":2,"cacheRead":3,"cacheWrite":4,"totalTokens":0}`:   10,
		`{"input":1,"output":2,"cacheRead":3,"cacheWrite":4}`:                   10,
		`{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0}`:   0,
	} {
		tr := read(t, v3, msgLine("u", "", `{"role":"user","content":"abcdefghijkl"}`),
			msgLine("a", "u", `{"role":"assistant","content":[{"type":"text","text":"zzzz"}],"usage":`+usage+`,"stopReason":"stop"}`))
		if tr.Final.Tokens != want || tr.Final.AnchorEntry != "a" {
			t.Errorf("usage %s: %+v, want anchored at %d", usage, tr.Final, want)
		}
	}
}

// The branch: the leaf is the last entry in file order; the walk stops at a
// parent that is not in the file; a cycle is an error (pi would hang).
func TestBranchWalk(t *testing.T) {
	tr := read(t, v3, msgLine("a", "", `{"role":"user","content":"abcd"}`), msgLine("b", "gone", `{"role":"user","content":"abcdefgh"}`))
	if tr.Branch != 1 || tr.Leaf != "b" || tr.Final.Tokens != 2 {
		t.Errorf("dangling parent: branch %d, leaf %s, %d tokens", tr.Branch, tr.Leaf, tr.Final.Tokens)
	}
	_, err := Read(strings.NewReader(strings.Join([]string{v3, msgLine("a", "b", `{"role":"user"}`), msgLine("b", "a", `{"role":"user"}`)}, "\n")))
	if err == nil || !strings.Contains(err.Error(), "cycle") {
		t.Errorf("cycle: %v", err)
	}
	tr = read(t, v3)
	if tr.Branch != 0 || tr.Final != (Estimate{}) || len(tr.Requests()) != 0 {
		t.Errorf("header only: %+v", tr)
	}
	// parentId "" is a root, even when an entry has the id "".
	tr = read(t, v3, `{"type":"label","id":"","parentId":null}`, `{"type":"message","id":"b","parentId":"","message":{"role":"user","content":"abcd"}}`)
	if tr.Branch != 1 {
		t.Errorf(`parentId "": branch %d, want 1`, tr.Branch)
	}
	// A repeated id: pi's byId keeps the last entry with it.
	tr = read(t, v3, msgLine("a", "", `{"role":"user","content":"abcdefghijkl"}`), msgLine("a", "", `{"role":"user","content":"abcd"}`), msgLine("c", "a", `{"role":"user","content":"abcd"}`))
	if tr.Branch != 2 || tr.Final.Tokens != 2 {
		t.Errorf("repeated id: branch %d, %d tokens, want 2 and 2", tr.Branch, tr.Final.Tokens)
	}
}

// v1: pi's migration skips session lines when chaining, so an entry after
// one hangs off the entry before it, and the session line is no entry.
func TestVersion1ChainSkipsSessionLines(t *testing.T) {
	tr := read(t, `{"type":"session","id":"s"}`,
		`{"type":"message","message":{"role":"user","content":"abcd"}}`,
		`{"type":"session","id":"inner"}`,
		`{"type":"message","message":{"role":"user","content":"abcdefgh"}}`)
	if tr.Branch != 2 || tr.Final.Tokens != 3 || tr.Stats.Entries != 2 {
		t.Errorf("branch %d, %d tokens, %d entries; want the two messages chained (3 tokens)", tr.Branch, tr.Final.Tokens, tr.Stats.Entries)
	}
}

// The first request carries Start even when a compaction precedes it (a
// session resumed from a compacted transcript starts there); the first
// request after a later compaction carries Compaction, and one compaction
// resets one request.
func TestRequestEvents(t *testing.T) {
	tr := read(t, v3,
		msgLine("u1", "", `{"role":"user","content":"hi"}`),
		`{"type":"compaction","id":"c1","parentId":"u1","summary":"s","firstKeptEntryId":"u1"}`,
		msgLine("a1", "c1", asst(100, "stop")),
		msgLine("a2", "a1", asst(200, "stop")),
		`{"type":"compaction","id":"c2","parentId":"a2","summary":"s","firstKeptEntryId":"a2"}`,
		`{"type":"compaction","id":"c3","parentId":"c2","summary":"s","firstKeptEntryId":"a2"}`,
		msgLine("a3", "c3", asst(300, "stop")),
		msgLine("a4", "a3", asst(400, "stop")))
	var got []Event
	for _, r := range tr.Requests() {
		got = append(got, r.Event)
	}
	if want := []Event{Start, None, Compaction, None}; !slices.Equal(got, want) {
		t.Errorf("events %v, want %v", got, want)
	}
}

// pi compares its estimate with the threshold as a JavaScript number: an
// answer whose usage is 899.5, then a user message of one token, puts the
// next request at pi's 900.5 (pi-req.mjs), over a threshold of 900, and
// pi's shouldCompact would compact there. The reading's Tokens is 900, its
// floor, yet it crosses; 900 exactly would not.
func TestReadingWithAFractionCrosses(t *testing.T) {
	tr := read(t, v3,
		msgLine("u1", "", `{"role":"user","content":"hello"}`),
		msgLine("a1", "u1", `{"role":"assistant","content":[],"usage":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":899.5},"stopReason":"stop"}`),
		msgLine("u2", "a1", `{"role":"user","content":"qqqq"}`),
		msgLine("a2", "u2", asst(950, "stop")))
	rp, err := tr.Replay(Options{Window: 1000, Reserve: 100})
	if err != nil {
		t.Fatal(err)
	}
	r := rp.Rows[1]
	if rd := r.Before.Reading(); rd.Tokens != 900 || !rd.Known || !rd.Crosses(900) || rd.Crosses(901) || rd.String() != "900" {
		t.Errorf("reading %+v (%s): want 900 and a fraction, over 900 and not over 901", rd, rd)
	}
	if !r.Stateless || !r.Sticky {
		t.Errorf("request 2 at pi's 900.5: stateless %v, sticky %v; want both pruned", r.Stateless, r.Sticky)
	}
	if Known(900).Crosses(900) {
		t.Errorf("a whole 900 crosses 900")
	}
}
