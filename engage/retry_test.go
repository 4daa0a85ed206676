package engage

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// testdata/retry-after-midstream-error.jsonl was written by pi 0.58.3 itself,
// run twice in print mode against a stand-in provider
// (../shared/tools/pi-mock, with the stream of the second run's first
// request cut by an Anthropic "overloaded_error" event after 4000
// characters of text). pi persisted the failed answer with its partial text
// (entry 90fdb363, stopReason "error"), dropped it from its context
// (_handleRetryableError) and retried; the retry's request carried no trace
// of it. The estimates are pi's own getContextUsage() before each request,
// as ../shared/tools/pi-mock/usage-ext.js logged them: 3, 100504 and 100504,
// not 101504 (the failed answer's 4000 characters are 1000 tokens).
func TestRetryLeavesTheFailedAnswerOut(t *testing.T) {
	// The resumed reading still counts the failed answer: pi rebuilds its
	// context from the file, where it stays; but the retry's answer anchors
	// after it. pi-end-usage.mjs: 100500.
	tr := asPiRead(t, "testdata/retry-after-midstream-error.jsonl",
		[]piRequest{{"453b80b3", 3}, {"90fdb363", 100504}, {"a7558e71", 100504}}, 100500)

	// With a threshold between the two figures (100616), pi's reading
	// (100504) does not cross: the retry goes out raw under both
	// policies, no switch, nothing re-billed.
	rp, err := tr.Replay(Options{Window: 117000, Reserve: 16384, PrunedRatio: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range rp.Rows {
		if row.Stateless || row.Sticky {
			t.Errorf("request %d goes out pruned (stateless %v, sticky %v) on %v; pi's reading is below the threshold %d", row.N, row.Stateless, row.Sticky, row.StickyReading, rp.Threshold)
		}
	}
	for name, p := range map[string]Policy{"stateless": rp.Stateless, "sticky": rp.Sticky} {
		if p != (Policy{}) {
			t.Errorf("%s: %+v, want nothing pruned, switched or re-billed", name, p)
		}
	}
}

// Retries in a row each drop the failed answer before them; a failed answer
// the user answers with a new prompt (no retry: the retries ran out, or the
// error was not one pi retries) stays in the context and is counted.
func TestRetriesInARowAndAFailureThatStays(t *testing.T) {
	failed := func(chars int) string {
		return fmt.Sprintf(`{"role":"assistant","content":[{"type":"text","text":%q}],"usage":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0},"stopReason":"error","errorMessage":"overloaded_error"}`, strings.Repeat("e", chars))
	}
	user := func(chars int) string {
		return fmt.Sprintf(`{"role":"user","content":%q}`, strings.Repeat("u", chars))
	}
	tr := read(t, v3,
		msgLine("u1", "", user(8)),              // 2 tokens
		msgLine("a1", "u1", asst(1000, "stop")), // anchor 1000
		msgLine("u2", "a1", user(40)),           // 10
		msgLine("e1", "u2", failed(400)),        // 100, retried:
		msgLine("e2", "e1", failed(800)),        // 200, retried again:
		msgLine("a2", "e2", asst(2000, "stop")), // anchor 2000
		msgLine("u3", "a2", user(40)),           // 10
		msgLine("e3", "u3", failed(400)),        // 100, not retried:
		msgLine("u4", "e3", user(40)),           // 10
		msgLine("a3", "u4", asst(3000, "stop")),
	)
	want := []int64{
		2,    // a1: u1
		1010, // e1: a1's 1000 + u2
		1010, // e2: the retry of e1, without e1's 100
		1010, // a2: the retry of e2, without e1's 100 or e2's 200
		2010, // e3: a2's 2000 + u3
		2120, // a3: 2000 + u3 + e3's 100 (kept: u4 follows it) + u4
	}
	var got []int64
	for _, r := range tr.Requests() {
		got = append(got, r.Before.Tokens)
	}
	if !slices.Equal(got, want) {
		t.Errorf("estimates %v, want %v", got, want)
	}
	if tr.Final.Tokens != 3000 {
		t.Errorf("final %d, want a3's 3000", tr.Final.Tokens)
	}
}

// testdata/retries-in-a-row.jsonl is pi 0.58.3's too, three print-mode runs
// against the stand-in: the second run's stream was cut twice and the third
// retry answered; the third run's was cut four times, which exhausts pi's
// three retries. The estimates are pi's own getContextUsage() before each
// request (usage-ext.js): every retry without any failed answer before it.
// The resumed reading counts all four failed answers of the last run, which
// stay in the file: pi-end-usage.mjs says 102503.
func TestRetriesInARowAsPiRanThem(t *testing.T) {
	tr, err := ReadFile("testdata/retries-in-a-row.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	want := []int64{3, 100504, 100504, 100504, 100503, 100503, 100503, 100503}
	var got []int64
	for _, r := range tr.Requests() {
		got = append(got, r.Before.Tokens)
	}
	if !slices.Equal(got, want) {
		t.Errorf("estimates %v, pi's %v", got, want)
	}
	if tr.Final.Tokens != 102503 || tr.Final.Unknown {
		t.Errorf("final %d (unknown %v), want pi's 102503", tr.Final.Tokens, tr.Final.Unknown)
	}
}

// testdata/retry-after-a-custom-entry.jsonl is pi 0.58.3's, two print-mode
// runs against the stand-in with an extension that persists its state at
// every turn_end (pi.appendEntry, as pi's own plan-mode example does); the
// second run's stream was cut after 1000 of 2000 characters. The turn_end
// of the failed answer wrote a custom entry (8eab5345) as its child before
// pi retried, so the retry (2203a6f1) is the custom entry's child, not the
// failed answer's. pi dropped the failed answer all the same: its own
// getContextUsage() before the three requests was 3, 100504, 100504. An
// entry that adds nothing to the context (a custom entry, a model or
// thinking-level change, a label) does not end the run of failed answers
// a retry leaves out.
func TestRetryAfterAnEntryThatAddsNothing(t *testing.T) {
	// pi-end-usage.mjs: 100500, the retry's answer anchoring.
	asPiRead(t, "testdata/retry-after-a-custom-entry.jsonl",
		[]piRequest{{"7e5be120", 3}, {"9e9541f8", 100504}, {"2203a6f1", 100504}}, 100500)
}

// piRequest is a request of a transcript pi wrote (its assistant entry)
// and pi's own getContextUsage() before it.
type piRequest struct {
	entry    string
	estimate int64
}

// asPiRead reads the transcript at path and checks its requests'
// estimates against pi's (want) and its resumed reading against
// pi-end-usage.mjs's (final).
func asPiRead(t *testing.T, path string, want []piRequest, final int64) *Transcript {
	t.Helper()
	tr, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	reqs := tr.Requests()
	if len(reqs) != len(want) {
		t.Fatalf("%d requests, want %d", len(reqs), len(want))
	}
	for i, w := range want {
		r := reqs[i]
		if r.Entry != w.entry || r.Before.Unknown || r.Before.Tokens != w.estimate {
			t.Errorf("request %d: %s estimate %d (unknown %v); pi's: %s %d", r.N, r.Entry, r.Before.Tokens, r.Before.Unknown, w.entry, w.estimate)
		}
	}
	if tr.Final.Tokens != final || tr.Final.Unknown {
		t.Errorf("final %d (unknown %v), want pi's %d", tr.Final.Tokens, tr.Final.Unknown, final)
	}
	return tr
}

// A failed answer pi cannot count (its content 5 is not iterable: a
// TypeError in pi's estimateTokens) makes the estimate unknown while it is
// in the context (the resumed reading), but pi drops it before it retries,
// so the retry's estimate is known: 100 for the answer before, 2 for the
// prompt after it.
func TestRetryLeavesOutAFailedAnswerPiCannotCount(t *testing.T) {
	tr, err := Read(strings.NewReader(strings.Join([]string{
		`{"type":"session","version":3,"id":"s","timestamp":"2026-03-10T09:14:55.120Z","cwd":"/w"}`,
		`{"type":"message","id":"u0","parentId":null,"message":{"role":"user","content":"hi"}}`,
		`{"type":"message","id":"a1","parentId":"u0","message":{"role":"assistant","content":[],"provider":"p","model":"m","usage":{"totalTokens":100},"stopReason":"stop"}}`,
		`{"type":"message","id":"u1","parentId":"a1","message":{"role":"user","content":"abcdefgh"}}`,
		`{"type":"message","id":"a2","parentId":"u1","message":{"role":"assistant","content":5,"provider":"p","model":"m","usage":{"totalTokens":0},"stopReason":"error"}}`,
		`{"type":"message","id":"a3","parentId":"a2","message":{"role":"assistant","content":[],"provider":"p","model":"m","usage":{"totalTokens":300},"stopReason":"stop"}}`,
		`{"type":"message","id":"u2","parentId":"a3","message":{"role":"user","content":"abcd"}}`,
		`{"type":"message","id":"a4","parentId":"u2","message":{"role":"assistant","content":5,"provider":"p","model":"m","usage":{"totalTokens":0},"stopReason":"error"}}`,
	}, "\n")))
	if err != nil {
		t.Fatal(err)
	}
	reqs := tr.Requests()
	if len(reqs) != 4 {
		t.Fatalf("%d requests, want 4", len(reqs))
	}
	if r := reqs[2].Before; r.Unknown || r.Tokens != 102 {
		t.Errorf("the retry: %d tokens (unknown %v), want 102 without the failed answer", r.Tokens, r.Unknown)
	}
	if !tr.Final.Unknown {
		t.Errorf("the resumed reading counts the failed answer pi cannot count: %d tokens, want unknown", tr.Final.Tokens)
	}
}
