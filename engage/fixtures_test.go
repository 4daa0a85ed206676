package engage

import (
	"bytes"
	"errors"
	"os"
	"testing"

	"sessdb/store/transcript"
)

// Every number below is copied from ../shared/testdata/pi-fixtures/EXPECTED.md,
// which records what pi 0.58.3 itself computed for each fixture.

type wantRequest struct {
	entry    string
	estimate int64 // estimateContextTokens over the context at the request's parent
	unknown  bool  // pi's getContextUsage reports null
	fallback int64 // the chars/4 sum EXPECTED gives beside a null, 0 where it gives none
}

type wantFixture struct {
	file     string
	entries  int64  // 0: not stated
	leaf     string // "": not stated
	branch   int    // 0: not stated
	messages int    // length of the "context roles" list; 0: not stated
	final    int64
	unknown  bool
	anchor   string // "": not stated
	trailing int64  // with anchor
	requests []wantRequest
}

var fixtures = []wantFixture{
	{file: "01-normal-multiturn.jsonl", entries: 16, leaf: "35bf992d", branch: 16, messages: 14, final: 7291, anchor: "35bf992d", trailing: 0,
		requests: []wantRequest{{"cd613e30", 18, false, 0}, {"1027c4d1", 6233, false, 0}, {"1e2feb89", 6515, false, 0}, {"c2ce6f44", 6627, false, 0}, {"78e51061", 6764, false, 0}, {"612e7696", 7157, false, 0}, {"35bf992d", 7243, false, 0}}},
	{file: "02-threshold-compaction-pending-usage.jsonl", leaf: "ab73738f", messages: 7, final: 186367, unknown: true, anchor: "cf1822ff", trailing: 0,
		requests: []wantRequest{{"d95bafc8", 14, false, 0}, {"177219d3", 120209, false, 0}, {"5c6e4337", 121225, false, 0}, {"2b491044", 186139, false, 0}, {"cf1822ff", 186224, false, 0}}},
	{file: "03-overflow-recovery.jsonl", messages: 7, final: 62843,
		requests: []wantRequest{{"21636369", 21, false, 0}, {"ea7b5bf5", 144511, false, 0}, {"795b929e", 196310, false, 0}, {"94b2b8fd", 196310, true, 148}, {"9b08923d", 61401, false, 0}}},
	{file: "05-truncated-midline.jsonl", entries: 7, leaf: "f1446bea", messages: 5, final: 6345, anchor: "b0c11fde", trailing: 2},
	{file: "06-ancient-header-timestamp.jsonl", entries: 6, leaf: "c320a473", final: 6314},
	{file: "07-dropped-lines.jsonl", entries: 7, leaf: "128b2f33", messages: 4, final: 6228},
	{file: "07b-kept-unknown-type.jsonl", entries: 8, leaf: "77aa88bb", branch: 8, messages: 4, final: 6228},
	{file: "08-v1-legacy.jsonl", entries: 9, messages: 3, final: 3331, unknown: true},
	{file: "09-v2-hookmessage.jsonl", messages: 5, final: 6297},
	{file: "10-sticky-engagement.jsonl", entries: 21, leaf: "3fffc830", messages: 9, final: 10022,
		requests: []wantRequest{{"7b89296c", 18, false, 0}, {"03cc0f27", 172502, false, 0}, {"766bad07", 172412, false, 0}, {"7dc59a3a", 183732, false, 0}, {"470b9805", 131734, false, 0}, {"cf84b683", 131776, false, 0}, {"08ceac39", 131900, false, 0}, {"53e8eb43", 132000, true, 142}, {"3fffc830", 9933, false, 0}}},
	{file: "11-branched-tree.jsonl", entries: 11, leaf: "965eda32", branch: 7, messages: 4, final: 6402, anchor: "db5b5fab", trailing: 45},
}

func TestFixtureEstimates(t *testing.T) {
	for _, w := range fixtures {
		t.Run(w.file, func(t *testing.T) {
			tr := readFixture(t, w.file)
			f := tr.Final
			if f.Tokens != w.final || f.Unknown != w.unknown || (w.messages != 0 && f.Messages != w.messages) {
				t.Errorf("final = %d (unknown %v, %d messages), want %d (unknown %v, %d messages)", f.Tokens, f.Unknown, f.Messages, w.final, w.unknown, w.messages)
			}
			if w.anchor != "" && (f.AnchorEntry != w.anchor || f.Trailing != w.trailing || f.Anchor+f.Trailing != f.Tokens) {
				t.Errorf("anchor %s %d + trailing %d, want anchor %s + trailing %d", f.AnchorEntry, f.Anchor, f.Trailing, w.anchor, w.trailing)
			}
			if w.entries != 0 && tr.Stats.Entries != w.entries {
				t.Errorf("entries = %d, want %d", tr.Stats.Entries, w.entries)
			}
			if w.leaf != "" && tr.Leaf != w.leaf {
				t.Errorf("leaf = %s, want %s", tr.Leaf, w.leaf)
			}
			if w.branch != 0 && tr.Branch != w.branch {
				t.Errorf("branch = %d entries, want %d", tr.Branch, w.branch)
			}
			if w.requests == nil {
				return
			}
			got := tr.Requests()
			if len(got) != len(w.requests) {
				t.Fatalf("%d requests, want %d", len(got), len(w.requests))
			}
			for i, r := range got {
				wr := w.requests[i]
				if r.Entry != wr.entry || r.Before.Tokens != wr.estimate || r.Before.Unknown != wr.unknown {
					t.Errorf("request %d: %s %d (unknown %v), want %s %d (unknown %v)", r.N, r.Entry, r.Before.Tokens, r.Before.Unknown, wr.entry, wr.estimate, wr.unknown)
				}
				if wr.fallback != 0 && r.Before.Fallback != wr.fallback {
					t.Errorf("request %d: fallback %d, want %d", r.N, r.Before.Fallback, wr.fallback)
				}
			}
		})
	}
}

// The oracle, a literal second reading of pi's code, agrees with the
// estimator on every request of every valid fixture, not only the numbers
// EXPECTED.md happens to list.
func TestFixturesAgainstOracle(t *testing.T) {
	for _, w := range fixtures {
		t.Run(w.file, func(t *testing.T) {
			tr := readFixture(t, w.file)
			o := newOracle(t, fixture(t, w.file))
			ids, tokens, unknown := o.requests()
			got := tr.Requests()
			if len(got) != len(ids) {
				t.Fatalf("%d requests, oracle %d", len(got), len(ids))
			}
			for i, r := range got {
				if r.Before.Tokens != tokens[i] || r.Before.Unknown != unknown[i] {
					t.Errorf("request %d (%s): %d unknown=%v, oracle %d unknown=%v", r.N, ids[i], r.Before.Tokens, r.Before.Unknown, tokens[i], unknown[i])
				}
			}
			fin, unk := o.estimate(o.path(o.entries[len(o.entries)-1].str("id")))
			if tr.Final.Tokens != fin || tr.Final.Unknown != unk {
				t.Errorf("final %d unknown=%v, oracle %d unknown=%v", tr.Final.Tokens, tr.Final.Unknown, fin, unk)
			}
		})
	}
}

// Fixture 02's last table row is a request the file does not hold yet: the
// next user message appended after the compaction.
func TestFixture02NextRequest(t *testing.T) {
	data, err := os.ReadFile(fixture(t, "02-threshold-compaction-pending-usage.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	next := `{"type":"message","id":"0a1b2c3d","parentId":"ab73738f","timestamp":"2026-03-11T14:03:40.000Z","message":{"role":"user","content":[{"type":"text","text":"Also add a mock Repository for the handler tests."}],"timestamp":1773237820000}}` + "\n"
	tr, err := Read(bytes.NewReader(append(data, next...)))
	if err != nil {
		t.Fatal(err)
	}
	if f := tr.Final; f.Tokens != 186380 || !f.Unknown || f.Fallback != 303 {
		t.Errorf("next request: %d unknown=%v fallback %d, want 186380 (stale), null, fallback 303", f.Tokens, f.Unknown, f.Fallback)
	}
}

// The tables of fixtures 02, 03 and 10 put the stateless check, the sticky
// rule on the raw estimate (what the extension did) and the sticky rule on
// pi's guarded estimate side by side. T = pruned.
func TestFixtureEngagementColumns(t *testing.T) {
	threshold := Threshold(DefaultWindow, DefaultReserve)
	if threshold != 183616 {
		t.Fatalf("threshold = %d, EXPECTED.md says 183616", threshold)
	}
	cases := []struct {
		file                        string
		next                        bool // append fixture 02's next request
		stateless, stickyRaw, guard string
	}{
		{"02-threshold-compaction-pending-usage.jsonl", true, "FFFTTT", "FFFTTT", "FFFTTF"},
		{"03-overflow-recovery.jsonl", false, "FFTTF", "FFTTT", "FFTFF"},
		{"10-sticky-engagement.jsonl", false, "FFFTFFFFF", "FFFTTTTFF", "FFFTTTTFF"},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			tr := readFixture(t, c.file)
			var ests []Estimate
			var events []Event
			for _, r := range tr.Requests() {
				ests, events = append(ests, r.Before), append(events, r.Event)
			}
			if c.next {
				data, _ := os.ReadFile(fixture(t, c.file))
				next := `{"type":"message","id":"0a1b2c3d","parentId":"ab73738f","timestamp":"x","message":{"role":"user","content":[{"type":"text","text":"Also add a mock Repository for the handler tests."}]}}`
				nt, err := Read(bytes.NewReader(append(data, next...)))
				if err != nil {
					t.Fatal(err)
				}
				ests, events = append(ests, nt.Final), append(events, Compaction)
			}
			var stateless, raw, guarded []byte
			sRaw, sGuard := Raw, Raw
			for i, e := range ests {
				sRaw = Step(sRaw, Known(e.Tokens), threshold, events[i])
				sGuard = Step(sGuard, e.Reading(), threshold, events[i])
				stateless = append(stateless, tf(Stateless(Known(e.Tokens), threshold)))
				raw, guarded = append(raw, tf(sRaw)), append(guarded, tf(sGuard))
			}
			if string(stateless) != c.stateless || string(raw) != c.stickyRaw || string(guarded) != c.guard {
				t.Errorf("stateless %s, sticky raw %s, sticky guarded %s; EXPECTED.md: %s, %s, %s", stateless, raw, guarded, c.stateless, c.stickyRaw, c.guard)
			}
		})
	}
}

func tf(s State) byte {
	if s == Engaged {
		return 'T'
	}
	return 'F'
}

// 04a-04d: pi takes its empty-file branch (and would overwrite the file);
// the reader says why instead.
func TestFixturesNotTranscripts(t *testing.T) {
	for file, want := range map[string]error{
		"04a-bad-header-missing.jsonl":       transcript.ErrNoHeader,
		"04b-bad-header-id-not-string.jsonl": transcript.ErrHeaderID,
		"04c-bad-header-unparseable.jsonl":   transcript.ErrNoHeader,
		"04d-empty.jsonl":                    transcript.ErrEmpty,
	} {
		_, err := ReadFile(fixture(t, file))
		var inv *transcript.InvalidError
		if !errors.As(err, &inv) || !errors.Is(err, want) {
			t.Errorf("%s: %v, want an InvalidError for %v", file, err, want)
			continue
		}
		if file == "04c-bad-header-unparseable.jsonl" && inv.Unparsed != 1 {
			t.Errorf("%s: Unparsed = %d, want line 1 (the header that does not parse)", file, inv.Unparsed)
		}
	}
}
