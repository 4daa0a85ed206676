package transcript

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// valid must judge every input as json.Valid does, but for depth: that is
// the contract pi's line dropping is reproduced with (JSON.parse, unlike
// encoding/json, nests without a limit). What it accepts, the walker and
// stringifyUnits then read without checking. The seeds are the tricky short
// inputs in testdata/fuzz/FuzzValidMatchesEncodingJSON; the depths are
// TestValidDepth's: with inputs 10000 deep among the seeds the fuzzer
// stalled at a few thousand executions.
func FuzzValidMatchesEncodingJSON(f *testing.F) {
	f.Fuzz(func(t *testing.T, b []byte) {
		got, want := valid(b), json.Valid(b)
		if got && !want && depthOf(b) > maxDepth {
			want = true // json.Valid's limit, which JSON.parse has not
		}
		if got != want {
			t.Fatalf("valid(%q) = %v, json.Valid says %v", b, got, want)
		}
		if !got {
			return
		}
		// The walker trusts valid's verdict: on what passed it must take
		// the value whole, and measure it as json.Compact would.
		w := walker{b: b}
		if raw := w.skip(); !bytes.Equal(raw, bytes.Trim(b, " \t\r\n")) {
			t.Fatalf("walker took %q of %q", raw, b)
		}
		if want, ok := stringifyOracle(b); ok {
			if got := stringifyUnits(bytes.Trim(b, " \t\r\n")); got != want {
				t.Fatalf("stringifyUnits(%q) = %d, want %d", b, got, want)
			}
		}
	})
}

// depthOf is the deepest nesting of brackets in b outside its strings.
func depthOf(b []byte) int {
	depth, deepest, in := 0, 0, false
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case in && c == '\\':
			i++
		case c == '"':
			in = !in
		case in:
		case c == '[' || c == '{':
			depth++
			deepest = max(deepest, depth)
		case c == ']' || c == '}':
			depth--
		}
	}
	return deepest
}

// deepInputs are nestings at and around encoding/json's limit of 10000,
// and far past it, with valid's verdict: JSON.parse's.
func deepInputs() []struct {
	in    string
	valid bool
} {
	nest := func(n int, open, close string) string {
		return strings.Repeat(open, n) + "1" + strings.Repeat(close, n)
	}
	return []struct {
		in    string
		valid bool
	}{
		{nest(maxDepth, "[", "]"), true},
		{nest(maxDepth+1, "[", "]"), true}, // json.Valid: false
		{nest(maxDepth, `{"":`, "}"), true},
		{nest(maxDepth+1, `{"":`, "}"), true}, // json.Valid: false
		{nest(maxDepth/2, `[{"a":`, "}]"), true},
		{nest(maxDepth/2, `[{"a":`, "}]") + "]", false}, // one closer too many
		{strings.Repeat("[", maxDepth+1), false},        // never closed
		{strings.Repeat("[", maxDepth) + strings.Repeat("]", maxDepth), true},
		{strings.Repeat("[", maxDepth) + "{}" + strings.Repeat("]", maxDepth), true}, // 10001 deep; json.Valid: false
		{strings.Repeat("[", 64) + "{" + strings.Repeat("]", 64), false},             // a mismatched closer past one word of open
		{nest(6000, `[{"a":`, "}]"), true},                                           // 12000 deep, objects and arrays alternating
		{strings.Repeat(`[{"a":`, 6000) + "1]]" + strings.Repeat("}]", 5999), false}, // a "]" closing the object 12000 deep
		{strings.Repeat("[", 12000) + "{" + strings.Repeat("]", 12000), false},       // a "]" closing an object 12001 deep
	}
}

// Depth is no reason to refuse a line, and the inputs mean what their
// comments say.
func TestValidDepth(t *testing.T) {
	for i, c := range deepInputs() {
		if got := valid([]byte(c.in)); got != c.valid {
			t.Errorf("input %d (%d bytes): valid = %v, want %v", i, len(c.in), got, c.valid)
		}
		if depthOf([]byte(c.in)) > maxDepth {
			continue
		}
		if got, want := valid([]byte(c.in)), json.Valid([]byte(c.in)); got != want {
			t.Errorf("input %d (%d bytes): valid = %v, json.Valid %v, at a depth json.Valid takes", i, len(c.in), got, want)
		}
	}
}

// Every line of every shared transcript gets json.Valid's verdict, as
// written and right-trimmed as the scanner retries it, and so does each
// file as a whole (several values: never one JSON text).
func TestValidSharedLines(t *testing.T) {
	var files []string
	for _, sub := range []string{"pi", "pi-fixtures"} {
		m, err := filepath.Glob(filepath.Join(shared(t, sub), "*.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	if len(files) < 17 {
		t.Fatalf("%d shared transcripts, want the 15 fixtures and 2 real ones", len(files))
	}
	lines, rejected := 0, 0
	for _, p := range files {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		check := func(what string, b []byte) {
			if got, want := valid(b), json.Valid(b); got != want {
				t.Errorf("%s %s: valid = %v, json.Valid %v: %.200q", filepath.Base(p), what, got, want, b)
			} else if !want && len(bytes.TrimSpace(b)) > 0 {
				rejected++
			}
		}
		check("whole file", data)
		for i, line := range bytes.Split(data, []byte{'\n'}) {
			lines++
			check("line "+strconv.Itoa(i+1), line)
			check("line "+strconv.Itoa(i+1)+" trimmed", bytes.TrimRight(line, " \t\r"))
		}
	}
	// The fixtures hold dropped and truncated lines: both verdicts occur
	// on more than the whole files.
	if rejected <= len(files) {
		t.Errorf("%d rejections over %d lines: the fixtures' broken lines were not seen", rejected, lines)
	}
}
