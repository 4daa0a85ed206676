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

// valid must judge every input as json.Valid does: that is the contract
// pi's line dropping is reproduced with. What it accepts, the walker and
// stringifyUnits then read without checking. The seeds are the tricky short
// inputs in testdata/fuzz/FuzzValidMatchesEncodingJSON; the nesting limit
// is TestValidDepth's: with inputs 10000 deep among the seeds the fuzzer
// stalled at a few thousand executions.
func FuzzValidMatchesEncodingJSON(f *testing.F) {
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := valid(b), json.Valid(b); got != want {
			t.Fatalf("valid(%q) = %v, json.Valid says %v", b, got, want)
		}
		if !json.Valid(b) {
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

// deepInputs are nestings at and around encoding/json's limit of 10000.
func deepInputs() []string {
	nest := func(n int, open, close string) string {
		return strings.Repeat(open, n) + "1" + strings.Repeat(close, n)
	}
	return []string{
		nest(maxDepth, "[", "]"),
		nest(maxDepth+1, "[", "]"),
		nest(maxDepth, `{"":`, "}"),
		nest(maxDepth+1, `{"":`, "}"),
		nest(maxDepth/2, `[{"a":`, "}]"),
		nest(maxDepth/2, `[{"a":`, "}]") + "]", // one closer too many
		strings.Repeat("[", maxDepth+1),        // refused at the limit, not at the end
		strings.Repeat("[", maxDepth) + strings.Repeat("]", maxDepth),
		strings.Repeat("[", maxDepth) + "{}" + strings.Repeat("]", maxDepth), // 10001 deep
		strings.Repeat("[", 64) + "{" + strings.Repeat("]", 64),              // a mismatched closer past one word of open
	}
}

// The nesting limit is where encoding/json puts it, and the inputs mean
// what their comments say.
func TestValidDepth(t *testing.T) {
	for i, s := range deepInputs() {
		if got, want := valid([]byte(s)), json.Valid([]byte(s)); got != want {
			t.Errorf("input %d (%d bytes): valid = %v, json.Valid %v", i, len(s), got, want)
		}
	}
	if in := deepInputs(); !valid([]byte(in[0])) || valid([]byte(in[1])) {
		t.Errorf("10000 nested arrays must pass and 10001 fail")
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
