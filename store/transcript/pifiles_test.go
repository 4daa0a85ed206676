package transcript

import (
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
