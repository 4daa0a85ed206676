package transcript

import (
	"strings"
	"testing"
)

// LoadThrowsBefore is true only past a line pi's load throws on: never for
// a file without one, and for one with one at line 3 only from line 4 on.
func TestLoadThrowsBefore(t *testing.T) {
	const (
		h3 = `{"type":"session","version":3,"id":"s","timestamp":"t","cwd":"/w"}`
		u  = `{"type":"message","id":"u1","parentId":null,"message":{"role":"user","content":"hello"}}`
		a  = `{"type":"message","id":"a1","parentId":"u1","message":{"role":"assistant","content":[],"provider":"p","model":"m","usage":{"totalTokens":100},"stopReason":"stop"}}`
	)
	for _, c := range []struct {
		lines  []string
		throws []bool // LoadThrowsBefore(1), (2), ...
	}{
		{[]string{h3, u, a}, []bool{false, false, false, false}},
		{[]string{h3, u, "null", a}, []bool{false, false, false, true, true}},
	} {
		b, err := Load(strings.NewReader(strings.Join(c.lines, "\n") + "\n"))
		if err != nil {
			t.Fatal(err)
		}
		for i, want := range c.throws {
			if got := b.LoadThrowsBefore(int64(i + 1)); got != want {
				t.Errorf("%d lines: LoadThrowsBefore(%d) = %v, want %v", len(c.lines), i+1, got, want)
			}
		}
	}
}

// An Estimator advanced past the branch's last entry estimates the whole
// file: a line pi's load throws on anywhere in it, after the last entry
// too, leaves it no reading, as Final has none.
func TestEstimatorPastTheEndOfAFileWithALinePiThrowsOn(t *testing.T) {
	const (
		h3 = `{"type":"session","version":3,"id":"s","timestamp":"t","cwd":"/w"}`
		u  = `{"type":"message","id":"u1","parentId":null,"message":{"role":"user","content":"hello"}}`
		a  = `{"type":"message","id":"a1","parentId":"u1","message":{"role":"assistant","content":[],"provider":"p","model":"m","usage":{"totalTokens":100},"stopReason":"stop"}}`
	)
	for _, lines := range [][]string{{h3, u, a, "null"}, {h3, u, "null", a}} {
		b, err := Load(strings.NewReader(strings.Join(lines, "\n") + "\n"))
		if err != nil {
			t.Fatal(err)
		}
		e := b.Estimator(nil)
		for range b.Len {
			e.Advance()
		}
		if est := e.Estimate(); !est.Unknown {
			t.Errorf("%q: the estimate past the end = %d tokens, want none", lines, est.Tokens)
		}
		if est := e.Retry(); !est.Unknown {
			t.Errorf("%q: the retry's estimate past the end = %d tokens, want none", lines, est.Tokens)
		}
	}
}
