package engage

import (
	"strings"
	"testing"

	"sessdb/store/transcript"
)

// Where pi cannot load the file (its load throws a TypeError on a null
// line, and in a version 1 file on a line that is a number, a string or a
// boolean), pi has no reading on resume, and Final has none either, as
// transcript.End has none (which promote stores): the two agree with pi.
// pi 0.58.3's answers by tools/pi-end-usage.mjs: a TypeError for each of
// the first two files, 100 for the third (a session line after the
// header pi skips). Before, Final read 100 tokens for all three.
func TestFinalHasNoReadingWherePiCannotLoadTheFile(t *testing.T) {
	const (
		h3 = `{"type":"session","version":3,"id":"s","timestamp":"t","cwd":"/w"}`
		u  = `{"type":"message","id":"u1","parentId":null,"message":{"role":"user","content":"hello"}}`
		a  = `{"type":"message","id":"a1","parentId":"u1","message":{"role":"assistant","content":[],"provider":"p","model":"m","usage":{"totalTokens":100},"stopReason":"stop"}}`
		h1 = `{"type":"session","id":"s","timestamp":"t","cwd":"/w"}`
		u1 = `{"type":"message","message":{"role":"user","content":"hello"}}`
		a1 = `{"type":"message","message":{"role":"assistant","content":[],"provider":"p","model":"m","usage":{"totalTokens":100},"stopReason":"stop"}}`
	)
	for _, c := range []struct {
		name  string
		lines []string
		want  int64 // -1: no reading
	}{
		{"a null line", []string{h3, u, "null", a}, -1},
		{"a number in a version 1 file", []string{h1, u1, "5", a1}, -1},
		{"a string in a version 1 file", []string{h1, u1, `"x"`, a1}, -1},
		{"a session line after the header", []string{h3, u, `{"type":"session","id":"z"}`, a}, 100},
	} {
		data := strings.Join(c.lines, "\n") + "\n"
		tr, err := Read(strings.NewReader(data))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		end, err := transcript.ReadEnd(strings.NewReader(data))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		r := tr.Final.Reading()
		switch {
		case c.want < 0 && r.Known:
			t.Errorf("%s: Final reads %d tokens, want none (pi cannot load the file)", c.name, r.Tokens)
		case c.want >= 0 && (!r.Known || r.Tokens != c.want):
			t.Errorf("%s: Final reads %d (known %v), want pi's %d", c.name, r.Tokens, r.Known, c.want)
		}
		if r.Known != end.Known || r.Known && r.Tokens != end.Tokens {
			t.Errorf("%s: Final %+v and End %+v disagree", c.name, r, end)
		}
	}
}
