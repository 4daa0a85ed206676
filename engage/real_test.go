package engage

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// The two real transcripts in ../shared/testdata/pi were written by pi
// itself (pi-mono's own test fixtures). Their README gives the line and
// assistant counts; the oracle gives every estimate independently. The final
// estimates were also reproduced by a separate Python transliteration of
// pi's TypeScript (json + UTF-16 length) while this package was written:
// 180820 and 177657.
func TestRealTranscripts(t *testing.T) {
	cases := []struct {
		file              string
		lines, assistants int64 // README.md
		compactions       int   // README.md
		final             int64
	}{
		{"before-compaction.jsonl", 1003, 484, 2, 180820},
		{"large-session.jsonl", 1019, 453, 0, 177657},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			path := filepath.Join(shared(t, "pi"), c.file)
			tr, err := ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			st := tr.Stats
			if st.Lines != c.lines || st.Entries != c.lines-1 || st.Blank != 0 || st.Dropped() != 0 {
				t.Errorf("stats %+v: want %d lines, a header and %d entries, nothing dropped", st, c.lines, c.lines-1)
			}
			// Version 1: pi's migration chains every entry to the previous
			// one, so the branch is the whole file.
			if tr.Version != 1 || int64(tr.Branch) != st.Entries {
				t.Errorf("version %d, branch %d of %d entries; want a v1 linear chain", tr.Version, tr.Branch, st.Entries)
			}
			if tr.Final.Tokens != c.final || tr.Final.Unknown {
				t.Errorf("final estimate %d (unknown %v), want %d", tr.Final.Tokens, tr.Final.Unknown, c.final)
			}

			reqs := tr.Requests()
			if int64(len(reqs)) != c.assistants {
				t.Fatalf("%d requests, want one per assistant message: %d", len(reqs), c.assistants)
			}
			o := newOracle(t, path)
			ids, tokens, unknown := o.requests()
			for i, r := range reqs {
				if r.Entry != ids[i] || r.Before.Tokens != tokens[i] || r.Before.Unknown != unknown[i] {
					t.Errorf("request %d: %s %d unknown=%v, oracle %s %d unknown=%v", r.N, r.Entry, r.Before.Tokens, r.Before.Unknown, ids[i], tokens[i], unknown[i])
				}
			}
			if fin, unk := o.estimate(o.path(tr.Leaf)); fin != tr.Final.Tokens || unk != tr.Final.Unknown {
				t.Errorf("final %d, oracle %d unknown=%v", tr.Final.Tokens, fin, unk)
			}

			// Where the estimate must grow: with no compaction between two
			// requests and a valid usage on the earlier answer, the later
			// estimate anchors on that answer, so it is at least its usage.
			for i := 1; i < len(reqs); i++ {
				prev, r := reqs[i-1], reqs[i]
				if r.Event != None || prev.StopReason == "error" || prev.StopReason == "aborted" || prev.Usage == 0 {
					continue
				}
				if r.Before.AnchorEntry != prev.Entry || r.Before.Tokens < prev.Usage {
					t.Errorf("request %d: estimate %d anchored on %s, want >= %d on the previous answer %s", r.N, r.Before.Tokens, r.Before.AnchorEntry, prev.Usage, prev.Entry)
				}
			}

			// After each compaction: unknown (the stale number is at least
			// what the compaction recorded as tokensBefore), and the first
			// known estimate after it is back under the threshold.
			before := tokensBefore(t, path)
			if len(before) != c.compactions {
				t.Fatalf("%d compactions in the file, README says %d", len(before), c.compactions)
			}
			seen := 0
			for i, r := range reqs {
				if r.Event != Compaction {
					continue
				}
				if seen >= len(before) || !r.Before.Unknown || r.Before.Tokens < before[seen] {
					t.Errorf("request %d after a compaction: %+v, want unknown with a stale estimate >= %v", r.N, r.Before, before)
				}
				seen++
				for _, next := range reqs[i+1:] {
					if next.Before.Unknown {
						continue
					}
					if next.Before.Crosses() {
						t.Errorf("request %d: first known estimate after a compaction %d is over the threshold", next.N, next.Before.Tokens)
					}
					break
				}
			}
			if seen != c.compactions {
				t.Errorf("%d Compaction resets, want %d", seen, c.compactions)
			}
		})
	}
}

// tokensBefore reads the compactions' tokensBefore with encoding/json.
func tokensBefore(t *testing.T, path string) []int64 {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []int64
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var e struct {
			Type         string `json:"type"`
			TokensBefore int64  `json:"tokensBefore"`
		}
		if json.Unmarshal(sc.Bytes(), &e) == nil && e.Type == "compaction" {
			out = append(out, e.TokensBefore)
		}
	}
	return out
}

// Crosses is shorthand for the default threshold in these tests.
func (e Estimate) Crosses() bool {
	return e.Reading().Crosses(Threshold(DefaultWindow, DefaultReserve))
}
