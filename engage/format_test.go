package engage

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
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

// The --json form says what each policy decided on: docs/engage.md's
// modelled replay of before-compaction.jsonl (window 190000, pruned ratio
// 0.75, cache prices 0.5 and 6.25), its stateless~ and sticky~ columns
// and its money, as JSON numbers, null where the table says unknown.
func TestJSONSaysWhatEachPolicyDecidedOn(t *testing.T) {
	tr, err := ReadFile(filepath.Join(shared(t, "pi"), "before-compaction.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	rp, err := tr.Replay(Options{Window: 190000, Reserve: DefaultReserve, PrunedRatio: 0.75})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := rp.WriteJSON(&out, &Prices{CacheRead: 0.5, CacheWrite: 6.25}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 485 {
		t.Fatalf("%d lines, want 484 requests and a summary", len(lines))
	}
	// docs/engage.md, the modelled table: request, stateless~, sticky~.
	for _, w := range []struct {
		n                 int
		stateless, sticky string
	}{
		{1, "167", "167"}, {172, "174005", "174005"}, {173, "131047", "131047"},
		{174, "null", "null"}, {175, "null", "null"}, {176, "26205", "26205"},
		{292, "175810", "132151"}, {303, "138488", "138488"}, {484, "167979", "167979"},
	} {
		var row struct {
			StatelessEstimate json.RawMessage `json:"stateless_estimate"`
			StickyEstimate    json.RawMessage `json:"sticky_estimate"`
		}
		if err := json.Unmarshal([]byte(lines[w.n-1]), &row); err != nil {
			t.Fatal(err)
		}
		if string(row.StatelessEstimate) != w.stateless || string(row.StickyEstimate) != w.sticky {
			t.Errorf("request %d: stateless_estimate %s, sticky_estimate %s; want %s, %s", w.n, row.StatelessEstimate, row.StickyEstimate, w.stateless, w.sticky)
		}
	}
	// The summary's money, as the docs' table prints it, with 4 decimals.
	for _, want := range []string{`"cache_read_price_usd":0.5000`, `"cache_write_price_usd":6.2500`,
		`"extra_cost_stateless_usd":14.3474`, `"extra_cost_sticky_usd":1.5013`, `"rebilled_stateless":2495202`, `"rebilled_sticky":261088`} {
		if !strings.Contains(lines[484], want) {
			t.Errorf("the summary lacks %s: %s", want, lines[484])
		}
	}
}

// An id holding a character beyond the printable ones, at the top of
// the BMP (U+FFFF, U+FFFE) or beyond it (a tag, private use, U+10FFFF),
// is escaped as \uXXXX, a surrogate pair beyond the BMP, and decodes back
// to itself: one at U+FFFF written as a pair would decode as two U+FFFD.
func TestJSONEscapesIDsAtAndBeyondTheBMPsEnd(t *testing.T) {
	for id, esc := range map[string]string{
		"a\uffffb":     `"a\uffffb"`,
		"a\ufffeb":     `"a\ufffeb"`,
		"a\U000e0001b": `"a\udb40\udc01b"`,
		"a\U000f0000b": `"a\udb80\udc00b"`,
		"a\U0010ffffb": `"a\udbff\udfffb"`,
	} {
		b, err := jsonText(id).MarshalJSON()
		if err != nil || string(b) != esc {
			t.Errorf("jsonText(%q) = %s, %v; want %s", id, b, err, esc)
			continue
		}
		var back string
		if err := json.Unmarshal(b, &back); err != nil || back != id {
			t.Errorf("%s decodes as %q, %v; want %q", b, back, err, id)
		}
	}
}

// WriteJSON returns nil only when it wrote the whole stream: prices
// whose extra cost is no number (the Go API takes any float; the CLI
// bounds them) make a summary JSON cannot hold, which is an error, not
// a stream that ends without its summary.
func TestWriteJSONFailsOnASummaryItCannotWrite(t *testing.T) {
	rp, err := readFixture(t, "10-sticky-engagement.jsonl").Replay(DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	if rp.Sticky.Rebilled == 0 {
		t.Fatal("nothing re-billed: the cost would be 0 whatever the price")
	}
	for _, p := range []Prices{{CacheRead: 0, CacheWrite: math.Inf(1)}, {CacheRead: math.NaN(), CacheWrite: 1}} {
		var out bytes.Buffer
		if err := rp.WriteJSON(&out, &p); err == nil {
			t.Errorf("WriteJSON with prices %+v = nil; want an error (the stream ends %q)", p, out.String()[max(0, out.Len()-80):])
		}
	}
}
