package engage

import (
	"slices"
	"strings"
	"testing"
)

// Tree navigation is no reset (ADR 0018; reference/pi.md 5.5): a session
// that left a branch, even one where a compaction ran, and went on from an
// earlier entry with a branch summary stays engaged on the branch it is
// on, although its estimate there is below the threshold. The compaction
// on the branch it left is not on the branch replayed. The estimates are
// pi's own, from pi 0.58.3's buildSessionContext and getContextUsage at
// each request's parent (the side branch's request is not replayed).
func TestTreeNavigationIsNoReset(t *testing.T) {
	tr := read(t, v3,
		msgLine("u1", "", `{"role":"user","content":"go"}`),
		msgLine("a1", "u1", asst(190000, "stop")),
		msgLine("u2", "a1", `{"role":"user","content":"more"}`),
		msgLine("a2", "u2", asst(120000, "stop")), // a pruned request's usage
		msgLine("s1", "a2", `{"role":"user","content":"side"}`),
		msgLine("as", "s1", asst(130000, "stop")),
		`{"type":"compaction","id":"cs","parentId":"as","summary":"`+strings.Repeat("s", 400)+`","firstKeptEntryId":"s1","tokensBefore":130000}`,
		`{"type":"branch_summary","id":"b1","parentId":"a2","fromId":"cs","summary":"`+strings.Repeat("b", 80)+`"}`,
		msgLine("u3", "b1", `{"role":"user","content":"back"}`),
		msgLine("a3", "u3", asst(121000, "stop")),
		msgLine("u4", "a3", `{"role":"user","content":"again"}`),
		msgLine("a4", "u4", asst(122000, "stop")))
	rp, err := tr.Replay(DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	var entries []string
	var events []Event
	var est []int64
	var sticky, stateless []bool
	for _, r := range rp.Rows {
		entries = append(entries, r.Entry)
		events = append(events, r.Event)
		est = append(est, r.Before.Reading().Tokens)
		sticky = append(sticky, r.Sticky)
		stateless = append(stateless, r.Stateless)
	}
	if want := []string{"a1", "a2", "a3", "a4"}; !slices.Equal(entries, want) {
		t.Fatalf("requests %v, want %v: the branch the session is on", entries, want)
	}
	if want := []int64{1, 190001, 120021, 121002}; !slices.Equal(est, want) {
		t.Errorf("estimates %v, pi's %v", est, want)
	}
	if want := []Event{Start, None, None, None}; !slices.Equal(events, want) {
		t.Errorf("events %v, want %v: neither the branch summary nor the compaction left behind is a reset", events, want)
	}
	if want := []bool{false, true, true, true}; !slices.Equal(sticky, want) {
		t.Errorf("sticky %v, want %v: engaged at request 2, and nothing since resets it", sticky, want)
	}
	if want := []bool{false, true, false, false}; !slices.Equal(stateless, want) {
		t.Errorf("stateless %v, want %v", stateless, want)
	}
}
