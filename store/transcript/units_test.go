package transcript

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"
)

func utf16Len(s string) int64 { return int64(len(utf16.Encode([]rune(s)))) }

// Content sizes as JavaScript's String length counts them.
func TestMeasureContent(t *testing.T) {
	msg := func(content string) Message {
		t.Helper()
		s, es := scanAll(t, strings.NewReader(hdr+"\n"+`{"type":"message","id":"a","message":{"role":"assistant","content":`+content+`}}`))
		if s.Err() != nil || len(es) != 1 {
			t.Fatalf("%s: %v", content, s.Err())
		}
		return es[0].Message
	}
	cases := []struct {
		name    string
		content string
		want    Content
	}{
		{"string", `"héllo 😀"`, Content{String: 8}}, // é is 1 unit, the emoji 2
		{"escapes count as the characters they stand for", `"a\nb\u00e9\ud83d\ude00\\"`, Content{String: 7}},
		{"text and thinking blocks", `[{"type":"text","text":"abc"},{"type":"thinking","thinking":"😀😀"}]`, Content{Text: 3, Thinking: 4}},
		{"members in any order", `[{"text":"abcd","type":"text"},{"thinking":"x","type":"thinking"}]`, Content{Text: 4, Thinking: 1}},
		{"an escaped type", `[{"type":"t\u0065xt","text":"ab"}]`, Content{Text: 2}},
		{"images counted, their data not", `[{"type":"image","data":"AAAA","mimeType":"image/png"},{"type":"image"}]`, Content{Images: 2}},
		{"unknown and odd blocks", `[{"type":"video","text":"abc"},"text",null,7,{"text":"no type"},{"type":"text","text":5}]`, Content{odd: oddBlock | oddText | oddTruthyText}}, // pi throws on null's type, and 5's length is undefined
		// JSON.stringify(arguments) of what JSON.parse read: no spaces, and
		// escapes only where JSON.stringify writes them (stringify_test.go).
		{"tool call: name + compact arguments", `[{"type":"toolCall","id":"c","name":"bash","arguments":{"command" : "ls -la", "n": [1, 2]}}]`, Content{ToolCalls: 4 + int64(len(`{"command":"ls -la","n":[1,2]}`))}},
		{"arguments are not HTML-escaped", `[{"type":"toolCall","name":"e","arguments":{"q":"<a&b>"}}]`, Content{ToolCalls: 1 + 13}},
		{"U+2028 in arguments stays one unit", `[{"type":"toolCall","name":"e","arguments":{"q":"` + "\u2028" + `"}}]`, Content{ToolCalls: 1 + 9}},
		{"an escape in arguments counts as the character", `[{"type":"toolCall","name":"e","arguments":{"q":"\u00e9"}}]`, Content{ToolCalls: 1 + 9}},
		{"an emoji in arguments is two units", `[{"type":"toolCall","name":"e","arguments":"😀"}]`, Content{ToolCalls: 1 + 4}},
		{"arguments absent", `[{"type":"toolCall","name":"abc"}]`, Content{ToolCalls: 3, odd: oddCall}}, // JSON.stringify(undefined) has no length
		{"an object is not content", `{"type":"text","text":"abc"}`, Content{odd: oddContent}},
	}
	for _, c := range cases {
		if got := msg(c.content).Content; got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
}

func TestMeasureMessage(t *testing.T) {
	line := `{"type":"message","id":"a","parentId":"p","message":{` +
		`"role":"bashExecution","command":"ls","output":"a\nb","usage":{"input":1,"output":2,"cacheRead":3,"cacheWrite":4,"totalTokens":10,"cost":{"input":9}},` +
		`"stopReason":"stop","summary":"xyz","Content":"ignored: keys are case-sensitive"}}`
	_, es := scanAll(t, strings.NewReader(hdr+"\n"+line))
	m := es[0].Message
	want := Message{Role: "bashExecution", StopReason: "stop", HasUsage: true, Usage: Usage{1, 2, 3, 4, 10, 10}, Content: Content{odd: oddContent}, Command: 2, Output: 3, Summary: 3}
	if m != want || es[0].ParentID != "p" {
		t.Errorf("%+v, want %+v", m, want)
	}
	for _, u := range []string{`null`, `0`, `"x"`, `[]`} {
		_, es := scanAll(t, strings.NewReader(hdr+"\n"+`{"type":"message","id":"a","message":{"role":"assistant","usage":`+u+`}}`))
		if es[0].Message.HasUsage {
			t.Errorf("usage %s counted as a usage object", u)
		}
	}
	_, es = scanAll(t, strings.NewReader(hdr+"\n"+`{"type":"message","id":"a","message":{"usage":{"input":"5","output":1e3,"totalTokens":null}}}`))
	// pi sums "5" + 1000 + undefined + undefined: a string, no number.
	if u := es[0].Message.Usage; u.Output != 1000 || u.Input != 0 || u.TotalTokens != 0 || !math.IsNaN(u.context) {
		t.Errorf("odd counters: %+v", u)
	}
	// A repeated member: the last one wins, as in JSON.parse.
	_, es = scanAll(t, strings.NewReader(hdr+"\n"+`{"type":"message","id":"a","message":{"role":"user","content":"abc"},"message":{"role":"assistant"}}`))
	if m := es[0].Message; m.Role != "assistant" || m.Content.String != 0 {
		t.Errorf("repeated message: %+v", m)
	}
	line = `{"type":"compaction","id":"c","parentId":"b","summary":"ab\u00e9","firstKeptEntryId":"k","content":"xy"}`
	_, es = scanAll(t, strings.NewReader(hdr+"\n"+line))
	if e := es[0]; e.Summary != 3 || !e.HasFirstKept || e.FirstKeptEntryID != "k" || e.Content.String != 2 {
		t.Errorf("compaction %+v", e)
	}
}

// Node decodes the file as UTF-8 with the WHATWG decoder: an ill-formed
// sequence becomes one U+FFFD for its longest valid prefix.
func TestUnitsIllFormedUTF8(t *testing.T) {
	cases := map[string]int64{
		"abc":              3,
		"é€😀":              4,
		"\xE2\x82A":        2, // truncated 3-byte sequence, then A
		"\xF0\x9F\x98":     1, // truncated 4-byte sequence
		"\xED\xA0\x80":     3, // an encoded surrogate: ED is a lead, A0 is not its continuation
		"\xC0\x80":         2, // overlong: C0 is never a lead
		"\xFF\xFE":         2,
		"\xF4\x90\x80\x80": 4, // above U+10FFFF: F4 takes 80..8F only
		"\xE0\x80\x80":     3, // overlong 3-byte
		"\xF0\x90\x80":     1,
	}
	for s, want := range cases {
		if got := textUnits([]byte(s)); got != want {
			t.Errorf("textUnits(%q) = %d, want %d", s, got, want)
		}
	}
}

func FuzzUnits(f *testing.F) {
	for _, s := range []string{"", "abc", "é😀", "\x00\u2028<&>", "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if utf8.ValidString(s) {
			if got, want := textUnits([]byte(s)), utf16Len(s); got != want {
				t.Fatalf("textUnits(%q) = %d, want %d", s, got, want)
			}
		}
		// A string written by any JSON encoder reads back as the same
		// number of units (encoding/json replaces ill-formed bytes with
		// \ufffd one per byte, as Go's own []rune conversion does).
		b, _ := json.Marshal(s)
		if got, want := literalUnits(b[1:len(b)-1]), utf16Len(s); got != want {
			t.Fatalf("literalUnits(%s) = %d, want %d", b, got, want)
		}
	})
}

// textUnits returns the length in UTF-16 code units of b read as UTF-8 text
// (no JSON escapes are interpreted: each byte of an escape is a character of
// the text, as in the compact JSON of tool-call arguments).
func textUnits(b []byte) int64 {
	var n int64
	for i := 0; i < len(b); {
		j := asciiRun(b, i, 0x80) // 0x80: no ASCII byte stops the run
		n += int64(j - i)
		if i = j; i >= len(b) {
			break
		}
		units, size := decodeUnits(b[i:])
		n += int64(units)
		i += size
	}
	return n
}
