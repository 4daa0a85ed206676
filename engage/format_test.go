package engage

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// Entry ids and header fields are the transcript writer's choice. These
// carry terminal escape sequences, a carriage return, a bell, DEL, a C1 CSI
// (U+009B, a one-character escape to many terminals), a bidi override, a
// newline, a leading quote, XML markup and invalid UTF-8; none is NUL.
var hostileIDs = []string{
	"a\x1bb",
	"\x1b[2J\x1b[H",
	"cr\rXX",
	"bel\x07",
	"csi\u009b1m",
	"del\x7f",
	"bidi\u202eab",
	"nl\nid",
	`"q"`,
	"<g>&amp;]]>",
	"x\xed\xa0\x80y", // a lone surrogate, as the scanner writes \ud800 (WTF-8): no UTF-8
}

// hostileTranscript alternates user messages with assistants whose ids are
// hostileIDs and whose usages cross a threshold of 900 on every other
// request, so both policies prune and the stateless check switches. The
// header's id and cwd carry escape sequences too.
func hostileTranscript(t *testing.T) *Transcript {
	t.Helper()
	lines := []string{`{"type":"session","version":3,"id":"s\u001b]0;pwned\u0007","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w\u001b[31m\r"}`}
	parent := "null"
	for i, id := range hostileIDs {
		user := fmt.Sprintf("u%d", i)
		lines = append(lines, fmt.Sprintf(`{"type":"message","id":%q,"parentId":%s,"message":{"role":"user","content":"hi"}}`, user, parent))
		idJSON := jsonQuote(id)
		lines = append(lines, fmt.Sprintf(`{"type":"message","id":%s,"parentId":%q,"message":%s}`, idJSON, user, asst(500+450*(i%2), "stop")))
		parent = idJSON
	}
	tr := read(t, lines...)
	rp, err := tr.Replay(Options{Window: 1000, Reserve: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(rp.Rows) != len(hostileIDs) || rp.Stateless.Switches == 0 {
		t.Fatalf("%d requests, %d stateless switches: the transcript does not read as meant", len(rp.Rows), rp.Stateless.Switches)
	}
	for i, r := range rp.Rows {
		if r.Entry != hostileIDs[i] {
			t.Fatalf("request %d has id %q, want %q", i+1, r.Entry, hostileIDs[i])
		}
	}
	return tr
}

// jsonQuote writes s as a JSON string, a lone surrogate in it (WTF-8) as
// its escape (json.Marshal would replace it), so the scanner reads what a
// hostile writer wrote: an id that is no UTF-8.
func jsonQuote(s string) string {
	if utf8.ValidString(s) {
		b, _ := json.Marshal(s)
		return string(b)
	}
	return `"` + strings.ReplaceAll(s, "\xed\xa0\x80", `\ud800`) + `"`
}

// unsafeRune reports the first character of b a terminal could act on: a
// C0 control other than the newline, DEL, a C1 control, a bidi control, or
// a byte that is not UTF-8. "" when there is none.
func unsafeRune(b []byte) string {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			return fmt.Sprintf("byte %#x at %d", b[i], i)
		case r == '\n':
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f) || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069):
			return fmt.Sprintf("%U at %d", r, i)
		}
		i += n
	}
	return ""
}

func TestTableEscapesIDs(t *testing.T) {
	for _, ratio := range []float64{1, 0.5} {
		rp, err := hostileTranscript(t).Replay(Options{Window: 1000, Reserve: 100, PrunedRatio: ratio})
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		if err := rp.WriteTable(&out, &Prices{CacheRead: 1, CacheWrite: 2}); err != nil {
			t.Fatal(err)
		}
		if bad := unsafeRune(out.Bytes()); bad != "" {
			t.Fatalf("ratio %v: the table holds %s:\n%q", ratio, bad, out.String())
		}
		rows := 0
		for _, line := range strings.Split(out.String(), "\n") {
			n, err := strconv.Atoi(strings.TrimSpace(line[:min(5, len(line))]))
			if err != nil || n < 1 || len(line) < 24 {
				continue
			}
			rows++
			r := rp.Rows[n-1]
			id := strconv.Quote(r.Entry)
			if r.Entry == "<g>&amp;]]>" {
				id = r.Entry // printable: as it is
			}
			if line[7:7+len(id)] != id {
				t.Errorf("request %d: entry field %q, want %s", n, line[7:], id)
			}
			// An id that quotes to at most the column's 10 characters keeps
			// the columns after it where the header puts them.
			if len(id) <= 10 && strings.TrimSpace(line[18:24]) != strconv.FormatInt(r.Line, 10) {
				t.Errorf("request %d: line column %q, want %d right-aligned in [18:24]:\n%s", n, line[18:24], r.Line, line)
			}
		}
		if rows != len(rp.Rows) {
			t.Errorf("ratio %v: %d table rows, want %d (an id broke a line?):\n%s", ratio, rows, len(rp.Rows), out.String())
		}
	}
}

// encoding/json escapes the C0 controls but not DEL, the C1 controls or the
// bidi overrides; WriteJSON escapes those too, and the ids still decode to
// what the transcript holds.
func TestJSONEscapesIDs(t *testing.T) {
	rp, err := hostileTranscript(t).Replay(Options{Window: 1000, Reserve: 100})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := rp.WriteJSON(&out, nil); err != nil {
		t.Fatal(err)
	}
	if bad := unsafeRune(out.Bytes()); bad != "" {
		t.Fatalf("the JSON holds %s:\n%q", bad, out.String())
	}
	text := out.String()
	sc := bufio.NewScanner(strings.NewReader(text))
	for i := 0; i < len(rp.Rows) && sc.Scan(); i++ {
		var row struct{ Entry string }
		if err := json.Unmarshal(sc.Bytes(), &row); err != nil {
			t.Fatalf("row %d %q: %v", i+1, sc.Text(), err)
		}
		want := string([]rune(rp.Rows[i].Entry)) // each byte that is no UTF-8 a U+FFFD, as encoding/json writes it
		if row.Entry != want {
			t.Errorf("row %d: entry %q, want %q", i+1, row.Entry, want)
		}
	}
	for _, esc := range []string{`\u001b`, `\u009b`, `\u007f`, `\u202e`, `\r`, `\n`} {
		if !strings.Contains(text, esc) {
			t.Errorf("the JSON lacks the escape %s", esc)
		}
	}
}

// The chart carries the ids in its tooltips and the name in its title:
// quoted where unprintable, then XML-escaped, so the markup in one id and
// the escape sequences in the name come back as text.
func TestSVGEscapesText(t *testing.T) {
	rp, err := hostileTranscript(t).Replay(Options{Window: 1000, Reserve: 100})
	if err != nil {
		t.Fatal(err)
	}
	name := "evil\x1b]0;x\x07<script>&.jsonl"
	b := writeSVG(t, rp, name, nil)
	if bad := unsafeRune(b); bad != "" {
		t.Fatalf("the chart holds %s", bad)
	}
	if bytes.Contains(b, []byte("<script")) || bytes.Contains(b, []byte("<g>&amp;]]>")) {
		t.Fatalf("text from the name or an id reached the chart unescaped")
	}
	root := parseSVG(t, b)
	checkChart(t, b, rp, nil)
	var titles []string
	root.walk(func(n *xnode) {
		if n.XMLName.Local == "title" {
			titles = append(titles, n.Text)
		}
	})
	if len(titles) == 0 || titles[0] != "sessdb engage replay "+strconv.Quote(name) {
		t.Errorf("document title %q, want the name quoted", titles)
	}
	all := strings.Join(titles, "\n")
	for _, r := range rp.Rows {
		id := printable(r.Entry)
		if (r.Event != None || r.Stateless != (r.N > 1 && rp.Rows[r.N-2].Stateless)) && !strings.Contains(all, "("+id+")") {
			t.Errorf("request %d is marked but no tooltip names it as (%s)", r.N, id)
		}
	}
	if !strings.Contains(all, "(<g>&amp;]]>)") {
		t.Errorf("the id with markup does not come back as text: %q", all)
	}
}
