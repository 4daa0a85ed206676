package engage_test

import (
	"fmt"
	"log"
	"strings"

	"sessdb/engage"
)

// The sticky rule through one session: a crossing engages, the pruned
// request's smaller reading does not disengage (where the stateless check
// switches back, a prompt-cache miss), and a compaction resets. The reading
// right after the compaction is unknown, as pi reports it, and an unknown
// reading never crosses.
func ExampleStep() {
	threshold := engage.Threshold(engage.DefaultWindow, engage.DefaultReserve)
	fmt.Println("threshold", threshold)
	state := engage.Raw
	for _, req := range []struct {
		r  engage.Reading
		ev engage.Event
	}{
		{engage.Known(18), engage.Start},          // rule 2: a reset disengages
		{engage.Known(183700), engage.None},       // rule 1: over the threshold engages
		{engage.Known(131700), engage.None},       // rule 3: the carried state stays
		{engage.Reading{}, engage.Compaction},     // rule 2: reset, and unknown never crosses
		{engage.Known(9900), engage.None},         // rule 3: raw stays raw
		{engage.Known(190000), engage.Compaction}, // rule 1 wins over a reset
	} {
		state = engage.Step(state, req.r, threshold, req.ev)
		fmt.Printf("%-10s %-8s sticky %-7s stateless %s\n", req.ev, req.r, state, engage.Stateless(req.r, threshold))
	}
	// Output:
	// threshold 183616
	// start      18       sticky raw     stateless raw
	// none       183700   sticky engaged stateless engaged
	// none       131700   sticky engaged stateless raw
	// compaction unknown  sticky raw     stateless raw
	// none       9900     sticky raw     stateless raw
	// compaction 190000   sticky engaged stateless engaged
}

// A host keeps one Tracker for all its sessions and tells it what happens:
// a start, each outgoing request with the reading before it, a compaction,
// the end.
func ExampleTracker() {
	t := engage.NewTracker(0) // 0: DefaultMaxSessions
	threshold := engage.Threshold(engage.DefaultWindow, engage.DefaultReserve)

	t.Start("s1")
	fmt.Println(t.Request("s1", engage.Known(190000), threshold))
	fmt.Println(t.Request("s1", engage.Known(131000), threshold)) // held: still pruned
	t.Compacted("s1")
	state, ok := t.State("s1")
	fmt.Println(state, ok) // unchanged until the next request
	fmt.Println(t.Request("s1", engage.Reading{}, threshold))
	t.End("s1")
	_, ok = t.State("s1")
	fmt.Println(ok, t.Len())
	// Output:
	// engaged
	// engaged
	// engaged true
	// raw
	// false 0
}

// pi's estimate of a small transcript: the last assistant's usage
// (totalTokens 6030) plus ceil(chars/4) of the user message after it (33
// characters: 9 tokens).
func ExampleRead() {
	const session = `{"type":"session","version":3,"id":"s1","timestamp":"2026-03-01T12:00:00.000Z","cwd":"/work"}
{"type":"message","id":"u1","parentId":null,"message":{"role":"user","content":"Fix the flaky test."}}
{"type":"message","id":"a1","parentId":"u1","message":{"role":"assistant","content":[{"type":"text","text":"Done."}],"provider":"anthropic","model":"claude-sonnet-4-5","usage":{"input":10,"output":20,"cacheRead":0,"cacheWrite":6000,"totalTokens":6030},"stopReason":"stop"}}
{"type":"message","id":"u2","parentId":"a1","message":{"role":"user","content":"Now add a regression test for it."}}
`
	t, err := engage.Read(strings.NewReader(session))
	if err != nil {
		log.Fatal(err)
	}
	f := t.Final
	fmt.Printf("leaf %s, %d entries on the branch\n", t.Leaf, t.Branch)
	fmt.Printf("reading %s = anchor %d (%s) + trailing %d\n", f.Reading(), f.Anchor, f.AnchorEntry, f.Trailing)
	// Output:
	// leaf u2, 3 entries on the branch
	// reading 6039 = anchor 6030 (a1) + trailing 9
}

// After a compaction pi reports no context usage until an assistant
// measures the compacted context: the reading is unknown. Tokens still holds
// the stale figure: a1's usage, measured before the compaction, plus the
// kept u2 (the summary sits before a1, whose usage stands for it).
func ExampleEstimate_Reading() {
	const session = `{"type":"session","version":3,"id":"s1","timestamp":"2026-03-01T12:00:00.000Z","cwd":"/work"}
{"type":"message","id":"u1","parentId":null,"message":{"role":"user","content":"Fix the flaky test."}}
{"type":"message","id":"a1","parentId":"u1","message":{"role":"assistant","content":[{"type":"text","text":"Done."}],"provider":"anthropic","model":"claude-sonnet-4-5","usage":{"input":10,"output":20,"cacheRead":0,"cacheWrite":6000,"totalTokens":6030},"stopReason":"stop"}}
{"type":"message","id":"u2","parentId":"a1","message":{"role":"user","content":"Now add a regression test for it."}}
{"type":"compaction","id":"c1","parentId":"u2","summary":"Fixed a flaky test.","firstKeptEntryId":"a1","tokensBefore":6039}
`
	t, err := engage.Read(strings.NewReader(session))
	if err != nil {
		log.Fatal(err)
	}
	f := t.Final
	fmt.Printf("reading %s (unknown %v, stale tokens %d)\n", f.Reading(), f.Unknown, f.Tokens)
	// Output:
	// reading unknown (unknown true, stale tokens 6039)
}
