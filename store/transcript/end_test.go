package transcript

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// piEnd is one answer of pi 0.58.3 itself, as testdata/end/pi-end.mjs (and
// the shared tools/pi-end-usage.mjs) print it.
type piEnd struct {
	Tokens *int64  `json:"tokens"` // null after a compaction until a fresh usage
	Model  *string `json:"model"`  // null when buildSessionContext has none
	Last   *struct {
		Entry      string  `json:"entry"`
		Role       *string `json:"role"`
		StopReason *string `json:"stopReason"`
		Calls      int64   `json:"calls"`
	} `json:"last"`
	Error string `json:"error"`
}

func loadPi(t *testing.T, path string) map[string]piEnd {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]piEnd
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return m
}

func readEndFile(t *testing.T, path string) End {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	end, err := ReadEnd(f)
	if err != nil {
		t.Fatalf("ReadEnd(%s): %v", filepath.Base(path), err)
	}
	return end
}

// compareEnd checks got against pi's answer: tokens null <-> !Known, model
// null <-> "", and, where pi's last message is given, its role, stopReason
// and tool calls (its entry id too, except for version 1 files, whose ids
// pi draws at random). model is the Model expected where it is not pi's
// string (see TestEndSyntheticAgainstPi); "" uses pi's.
func compareEnd(t *testing.T, name string, got End, pi piEnd, version int64, model *string) {
	t.Helper()
	if pi.Error != "" {
		t.Fatalf("%s: pi failed on it: %s", name, pi.Error)
	}
	if pi.Tokens == nil {
		if got.Known {
			t.Errorf("%s: tokens %d known, pi reports null", name, got.Tokens)
		}
	} else if !got.Known || got.Tokens != *pi.Tokens {
		t.Errorf("%s: tokens %d (known %v), pi %d", name, got.Tokens, got.Known, *pi.Tokens)
	}
	want := ""
	switch {
	case model != nil:
		want = *model
	case pi.Model != nil:
		want = *pi.Model
	}
	if got.Model != want {
		t.Errorf("%s: model %q, want %q (pi: %v)", name, got.Model, want, strOrNull(pi.Model))
	}
	if pi.Last == nil {
		if got.Last != (LastMessage{}) {
			t.Errorf("%s: last message %+v, pi finds none", name, got.Last)
		}
		return
	}
	l := got.Last
	if l.Role != deref(pi.Last.Role) || l.StopReason != deref(pi.Last.StopReason) || l.Calls != pi.Last.Calls {
		t.Errorf("%s: last message %s/%s/%d calls, pi %s/%s/%d", name, l.Role, l.StopReason, l.Calls, deref(pi.Last.Role), deref(pi.Last.StopReason), pi.Last.Calls)
	}
	if version >= 2 && l.Entry != pi.Last.Entry {
		t.Errorf("%s: last message is entry %s, pi's is %s", name, l.Entry, pi.Last.Entry)
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func strOrNull(s *string) string {
	if s == nil {
		return "null"
	}
	return fmt.Sprintf("%q", *s)
}

// versionOf is the format version pi reads path as (0 for a file that is
// not a transcript).
func versionOf(t *testing.T, path string) int64 {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Load(bytes.NewReader(data))
	if err != nil {
		return 0
	}
	return b.Version
}

// The end-of-run reading and model equal pi's own on every fixture and on
// both real transcripts: END-USAGE.json was computed by pi 0.58.3 with the
// shared tools/pi-end-usage.mjs. The last message is compared with what
// testdata/end/pi-end.mjs read from pi's own branch of the same files.
func TestEndFixturesAgainstPi(t *testing.T) {
	fixtures := shared(t, "pi-fixtures")
	real := shared(t, "pi")
	usage := loadPi(t, filepath.Join(fixtures, "END-USAGE.json"))
	last := loadPi(t, filepath.Join("testdata", "end", "PI-SHARED.json"))
	if len(usage) != 17 {
		t.Fatalf("END-USAGE.json has %d transcripts, expected 15 fixtures and 2 real ones", len(usage))
	}
	for name, pi := range usage {
		path := filepath.Join(fixtures, name)
		if _, err := os.Stat(path); err != nil {
			path = filepath.Join(real, name)
		}
		l, ok := last[name]
		if !ok || l.Tokens == nil != (pi.Tokens == nil) || (pi.Tokens != nil && *l.Tokens != *pi.Tokens) {
			t.Fatalf("%s: PI-SHARED.json does not describe the file END-USAGE.json does", name)
		}
		pi.Last = l.Last
		got := readEndFile(t, path)
		compareEnd(t, name, got, pi, versionOf(t, path), nil)
		if strings.HasPrefix(name, "04") {
			// pi takes its empty-file branch: ReadEnd says why.
			if got.Invalid == nil || !got.Known || got.Tokens != 0 {
				t.Errorf("%s: %+v, want pi's fresh session (0 tokens, known) and the reason it is not a transcript", name, got)
			}
		} else if got.Invalid != nil {
			t.Errorf("%s: Invalid = %v", name, got.Invalid)
		}
	}
}

// Synthetic transcripts for every case of the run's shape and of the model
// rule, each with pi's own figures in testdata/end/PI.json (see pi-end.mjs
// there). The shape is this package's reading of pi's agent loop; pi has
// no such function, so it is stated here, file by file.
func TestEndSyntheticAgainstPi(t *testing.T) {
	dir := filepath.Join("testdata", "end")
	pi := loadPi(t, filepath.Join(dir, "PI.json"))
	none := ""
	cases := []struct {
		file  string
		shape Shape
		model *string // where Model deliberately differs from pi's string
	}{
		{"01-answered-stop.jsonl", Answered, nil},
		{"02-answered-length.jsonl", Answered, nil},
		{"03-errored-error.jsonl", Errored, nil},
		{"04-errored-aborted-with-call.jsonl", Errored, nil},
		{"05-unanswered-tool-call.jsonl", Unanswered, nil},
		{"06-unanswered-tool-result.jsonl", Unanswered, nil},
		{"07-unanswered-user.jsonl", Unanswered, nil},
		{"08-custom-message-last.jsonl", Unanswered, nil},
		{"09-bash-execution-last.jsonl", Unanswered, nil},
		{"10-tooluse-without-call.jsonl", Answered, nil},
		{"11-compaction-after-answer.jsonl", Answered, nil},
		{"12-error-after-answer.jsonl", Errored, nil},
		{"13-header-only.jsonl", Unanswered, nil},
		{"14-branch-summary-last.jsonl", Unanswered, nil},
		{"15-empty-branch-summary-last.jsonl", Answered, nil},
		{"16-label-and-thinking-last.jsonl", Answered, nil},
		{"17-unknown-stop-reason.jsonl", Answered, nil},
		{"20-model-change-last.jsonl", Answered, nil},
		{"21-model-change-then-answer.jsonl", Answered, nil},
		{"22-error-answer-other-model.jsonl", Errored, nil},
		// pi prints "undefined/claude-sonnet-4-5": no model its registry
		// can find, so none of the transcript's is resumed.
		{"23-answer-without-provider.jsonl", Answered, &none},
		{"24-model-change-only.jsonl", Unanswered, nil},
		{"25-model-on-abandoned-branch.jsonl", Unanswered, nil},
		{"26-model-change-before-compaction.jsonl", Answered, nil},
		// A modelId that is a number: pi prints "openai/5", and its
		// registry, comparing ids with ===, finds no such model.
		{"27-model-change-non-string.jsonl", Answered, &none},
		{"28-v1-model-change-last.jsonl", Answered, nil},
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != len(cases) || len(pi) != len(cases) {
		t.Fatalf("%d transcripts in %s, %d answers in PI.json, %d cases here", len(files), dir, len(pi), len(cases))
	}
	for _, c := range cases {
		p, ok := pi[c.file]
		if !ok {
			t.Fatalf("%s: not in PI.json", c.file)
		}
		path := filepath.Join(dir, c.file)
		got := readEndFile(t, path)
		compareEnd(t, c.file, got, p, versionOf(t, path), c.model)
		if s := got.Last.Shape(); s != c.shape {
			t.Errorf("%s: shape %s, want %s (last message %+v)", c.file, s, c.shape, got.Last)
		}
		if got.Invalid != nil {
			t.Errorf("%s: Invalid = %v", c.file, got.Invalid)
		}
	}
}

// The shape by stopReason, pi's whole vocabulary and what it does not know.
func TestShape(t *testing.T) {
	cases := []struct {
		m    LastMessage
		want Shape
	}{
		{LastMessage{}, Unanswered},
		{LastMessage{Role: "assistant", StopReason: "stop"}, Answered},
		{LastMessage{Role: "assistant", StopReason: "length"}, Answered},
		{LastMessage{Role: "assistant", StopReason: "length", Calls: 1}, Unanswered},
		{LastMessage{Role: "assistant", StopReason: "toolUse", Calls: 2}, Unanswered},
		{LastMessage{Role: "assistant", StopReason: "toolUse"}, Answered},
		{LastMessage{Role: "assistant", StopReason: "error"}, Errored},
		{LastMessage{Role: "assistant", StopReason: "aborted", Calls: 1}, Errored},
		{LastMessage{Role: "assistant"}, Answered},
		{LastMessage{Role: "assistant", StopReason: "refusal", Calls: 1}, Unanswered},
		{LastMessage{Role: "user"}, Unanswered},
		{LastMessage{Role: "toolResult"}, Unanswered},
		{LastMessage{Role: "custom"}, Unanswered},
		{LastMessage{Role: "bashExecution"}, Unanswered},
		{LastMessage{Role: "branchSummary"}, Unanswered},
		{LastMessage{Role: "Assistant", StopReason: "stop"}, Unanswered},
	}
	for _, c := range cases {
		if got := c.m.Shape(); got != c.want {
			t.Errorf("%+v: %s, want %s", c.m, got, c.want)
		}
	}
}

// ReadEnd sits behind an io.TeeReader while the store copies the file, so
// it must read every byte, whatever it finds: the copy must be whole for a
// transcript, a file that is not one, and one whose scan stops early.
func TestReadEndReadsToEOF(t *testing.T) {
	fixtures := shared(t, "pi-fixtures")
	files, err := filepath.Glob(filepath.Join(fixtures, "*.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range files {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var copied bytes.Buffer
		if _, err := ReadEnd(io.TeeReader(bytes.NewReader(data), &copied)); err != nil {
			t.Errorf("%s: %v", filepath.Base(path), err)
		}
		if !bytes.Equal(copied.Bytes(), data) {
			t.Errorf("%s: %d of %d bytes passed through", filepath.Base(path), copied.Len(), len(data))
		}
	}
	// A non-transcript with a long tail after the line that decides it.
	data := []byte(`{"type":"message","id":"a"}` + "\n" + strings.Repeat(`{"type":"message","id":"b","parentId":"a"}`+"\n", 50000))
	var copied bytes.Buffer
	end, err := ReadEnd(io.TeeReader(bytes.NewReader(data), &copied))
	if err != nil || end.Invalid == nil || !errors.Is(end.Invalid, ErrNoHeader) || copied.Len() != len(data) {
		t.Errorf("no header: %+v, %v, %d of %d bytes", end, err, copied.Len(), len(data))
	}
}

// A line over MaxLineBytes stops the scan: the reading is unknown (an
// error), and the rest of the file still passes through.
func TestReadEndLineTooLong(t *testing.T) {
	if testing.Short() {
		t.Skip("streams a 64 MiB line")
	}
	head := hdr + "\n"
	tail := "\n" + `{"type":"message","id":"b","message":{"role":"user","content":"hi"}}` + "\n"
	n := int64(len(head)) + MaxLineBytes + 1 + int64(len(tail))
	var counted countWriter
	r := io.TeeReader(io.MultiReader(strings.NewReader(head), io.LimitReader(repeatByte('x'), MaxLineBytes+1), strings.NewReader(tail)), &counted)
	end, err := ReadEnd(r)
	if !errors.Is(err, ErrLineTooLong) || end != (End{}) {
		t.Errorf("%+v, %v; want ErrLineTooLong and no reading", end, err)
	}
	if int64(counted) != n {
		t.Errorf("%d of %d bytes passed through", counted, n)
	}
}

type repeatByte byte

func (b repeatByte) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(b)
	}
	return len(p), nil
}

type countWriter int64

func (c *countWriter) Write(p []byte) (int, error) { *c += countWriter(len(p)); return len(p), nil }

// A read error is returned at once, with no reading; a parentId cycle is
// ErrCycle (pi would loop forever).
func TestReadEndErrors(t *testing.T) {
	boom := errors.New("boom")
	r := &failAfter{r: strings.NewReader(hdr + "\n" + `{"type":"message","id":"a","message":{"role":"user","content":"hi"}}` + "\n"), err: boom}
	end, err := ReadEnd(r)
	if !errors.Is(err, boom) || end != (End{}) {
		t.Errorf("read error: %+v, %v", end, err)
	}
	if r.calls != 2 {
		t.Errorf("read %d times: a failed reader is read again", r.calls)
	}
	cycle := hdr + "\n" + `{"type":"message","id":"a","parentId":"b","message":{"role":"user","content":"hi"}}` + "\n" +
		`{"type":"message","id":"b","parentId":"a","message":{"role":"user","content":"hi"}}` + "\n"
	end, err = ReadEnd(strings.NewReader(cycle))
	if !errors.Is(err, ErrCycle) || end != (End{}) {
		t.Errorf("cycle: %+v, %v", end, err)
	}
}

// failAfter returns its reader's bytes in one read, then err, and counts
// the calls.
type failAfter struct {
	r     io.Reader
	err   error
	calls int
}

func (f *failAfter) Read(p []byte) (int, error) {
	f.calls++
	if f.calls == 1 {
		return f.r.Read(p)
	}
	return 0, f.err
}

// Offsets point at the line of the entry, so the store can tell whether the
// last message lies in what it delivered.
func TestEndOffset(t *testing.T) {
	first := hdr + "\n" + `{"type":"message","id":"a","message":{"role":"user","content":"hi"}}` + "\n"
	second := `{"type":"message","id":"b","parentId":"a","message":{"role":"assistant","content":[],"stopReason":"stop","provider":"p","model":"m"}}` + "\n"
	end, err := ReadEnd(strings.NewReader(first + "\n" + second))
	if err != nil {
		t.Fatal(err)
	}
	if end.Last.Entry != "b" || end.Last.Offset != int64(len(first))+1 || end.Last.Line != 4 || end.Model != "p/m" {
		t.Errorf("%+v: want entry b at offset %d, line 4, model p/m", end, len(first)+1)
	}
}

// Whatever the bytes, ReadEnd reads them all, never panics, and answers
// either with a reading or with an error and the zero End.
func FuzzReadEnd(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "end", "*.jsonl"))
	for _, p := range files {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var copied countWriter
		end, err := ReadEnd(io.TeeReader(bytes.NewReader(data), &copied))
		if int(copied) != len(data) {
			t.Fatalf("%d of %d bytes passed through", copied, len(data))
		}
		switch {
		case err != nil && end != (End{}):
			t.Fatalf("%v with a reading %+v", err, end)
		case end.Invalid != nil && (end.Tokens != 0 || !end.Known || end.Model != "" || end.Last != (LastMessage{})):
			t.Fatalf("not a transcript, yet %+v", end)
		case end.Last.Line == 0 && end.Last != (LastMessage{}):
			t.Fatalf("a last message without a line: %+v", end.Last)
		case end.Last.Line != 0 && (end.Last.Line > int64(bytes.Count(data, []byte{'\n'}))+1 || end.Last.Offset >= int64(len(data))):
			t.Fatalf("a last message beyond the file: %+v", end.Last)
		}
	})
}

// An empty id is still an id: the last message is the last one on the
// branch even when its id is "", not an earlier one.
func TestEndLastMessageWithEmptyID(t *testing.T) {
	in := hdr + "\n" + `{"type":"message","id":"a","message":{"role":"user","content":"hi"}}` + "\n" +
		`{"type":"message","id":"","parentId":"a","message":{"role":"assistant","content":[],"stopReason":"stop"}}` + "\n"
	end, err := ReadEnd(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if end.Last.Line != 3 || end.Last.Role != "assistant" || end.Last.Shape() != Answered {
		t.Errorf("%+v: want the assistant on line 3", end.Last)
	}
}

// Where pi's sum of a usage's counters is no number, pi's reading is no
// number either, and none is reported: a counter absent (undefined: NaN),
// a string, an object or an array (string concatenation), infinite
// counters of opposite signs (NaN). pi 0.58.3's own answers, by
// tools/pi-end-usage.mjs on the same lines (a usage, then a user message of
// 2 tokens): NaN, "1002", "51002", NaN, NaN, "202"; where pi's arithmetic
// makes a number of null, true, false and "" (null+5, true as totalTokens,
// "" falsy), the reading is pi's: 8, 3, 4, and 9 for an old file's usage
// without totalTokens.
func TestReadEndHasNoReadingWherePisIsNoNumber(t *testing.T) {
	for _, c := range []struct {
		usage string
		want  int64 // -1: no reading
	}{
		{`{"input":1,"output":1}`, -1},
		{`{"input":1,"output":1,"cacheRead":0,"cacheWrite":0,"totalTokens":"100"}`, -1},
		{`{"input":"5","output":1,"cacheRead":0,"cacheWrite":0,"totalTokens":0}`, -1},
		{`{}`, -1},
		{`{"input":1e400,"output":-1e400,"cacheRead":0,"cacheWrite":0,"totalTokens":0}`, -1},
		{`{"input":1,"output":1,"cacheRead":[],"cacheWrite":0,"totalTokens":0}`, -1},
		{`{"input":1,"output":1,"cacheRead":{},"cacheWrite":0,"totalTokens":0}`, -1},
		{`{"input":null,"output":true,"cacheRead":false,"cacheWrite":5,"totalTokens":0}`, 8},
		{`{"input":1,"output":1,"cacheRead":0,"cacheWrite":0,"totalTokens":true}`, 3},
		{`{"input":1,"output":1,"cacheRead":0,"cacheWrite":0,"totalTokens":""}`, 4},
		{`{"input":1,"output":1,"cacheRead":2,"cacheWrite":3}`, 9},
		{`{"input":1,"output":1,"cacheRead":2,"cacheWrite":3,"totalTokens":"x","totalTokens":7}`, 9},
	} {
		file := `{"type":"session","version":3,"id":"s","timestamp":"2026-03-10T09:14:55.120Z","cwd":"/w"}` + "\n" +
			`{"type":"message","id":"a1","parentId":null,"timestamp":"t","message":{"role":"assistant","content":[],"provider":"p","model":"m","usage":` + c.usage + `,"stopReason":"stop"}}` + "\n" +
			`{"type":"message","id":"u1","parentId":"a1","timestamp":"t","message":{"role":"user","content":"hello"}}` + "\n"
		end, err := ReadEnd(strings.NewReader(file))
		if err != nil {
			t.Fatalf("usage %s: %v", c.usage, err)
		}
		switch {
		case c.want < 0 && end.Known:
			t.Errorf("usage %s: reading %d tokens, want none (pi's is no number)", c.usage, end.Tokens)
		case c.want >= 0 && (!end.Known || end.Tokens != c.want):
			t.Errorf("usage %s: reading %d tokens (known %v), want pi's %d", c.usage, end.Tokens, end.Known, c.want)
		}
	}
}

// A usage that is truthy but no object is an anchor to pi 0.58.3
// (getAssistantUsage asks only that it be truthy), and its
// calculateContextTokens is NaN: pi's reading is no number, and none is
// stored, an earlier anchor's included. A falsy one anchors nothing, in
// pi as here. pi's answers by tools/pi-end-usage.mjs: NaN for 5, -1,
// "abc", [1,2], [], true, and 7 after a usage of 100; 2 (hello, with no
// anchor) for 0, "", false, null; 102 for 7 on an errored answer, which
// anchors nothing.
func TestReadEndHasNoReadingWhereUsageIsNoObject(t *testing.T) {
	const head = `{"type":"session","version":3,"id":"s","timestamp":"2026-03-10T09:14:55.120Z","cwd":"/w"}` + "\n"
	const good = `{"type":"message","id":"a0","parentId":null,"timestamp":"t","message":{"role":"assistant","content":[],"provider":"p","model":"m","usage":{"input":1,"output":1,"cacheRead":0,"cacheWrite":0,"totalTokens":100},"stopReason":"stop"}}` + "\n"
	for _, c := range []struct {
		before, usage, stop string
		want                int64 // -1: no reading
	}{
		{"", `5`, "stop", -1},
		{"", `-1`, "stop", -1},
		{"", `"abc"`, "stop", -1},
		{"", `[1,2]`, "stop", -1},
		{"", `[]`, "stop", -1},
		{"", `true`, "stop", -1},
		{good, `7`, "stop", -1},
		{"", `0`, "stop", 2},
		{"", `""`, "stop", 2},
		{"", `false`, "stop", 2},
		{"", `null`, "stop", 2},
		{good, `7`, "error", 102},
	} {
		parent := "null"
		if c.before != "" {
			parent = `"a0"`
		}
		file := head + c.before +
			`{"type":"message","id":"a1","parentId":` + parent + `,"timestamp":"t","message":{"role":"assistant","content":[],"provider":"p","model":"m","usage":` + c.usage + `,"stopReason":"` + c.stop + `"}}` + "\n" +
			`{"type":"message","id":"u1","parentId":"a1","timestamp":"t","message":{"role":"user","content":"hello"}}` + "\n"
		end, err := ReadEnd(strings.NewReader(file))
		if err != nil {
			t.Fatalf("usage %s: %v", c.usage, err)
		}
		switch {
		case c.want < 0 && end.Known:
			t.Errorf("usage %s (%s, after an anchor: %v): reading %d tokens, want none (pi's is NaN)", c.usage, c.stop, c.before != "", end.Tokens)
		case c.want >= 0 && (!end.Known || end.Tokens != c.want):
			t.Errorf("usage %s (%s, after an anchor: %v): reading %d tokens (known %v), want pi's %d", c.usage, c.stop, c.before != "", end.Tokens, end.Known, c.want)
		}
	}
}

// The reading at the end is pi's own number or none: where pi's estimate
// has a fraction, or is beyond ±2^62, no int64 is pi's figure, and End
// has no reading (Final still has the floor and the clamp, which the
// controller compares with a threshold as pi does). pi 0.58.3's answers
// by tools/pi-end-usage.mjs: 1.5, 3128.9, 1e+300, -1e+300,
// 9007199254740992 (a whole number beyond 2^53, rounded as pi rounds).
func TestReadEndHasNoReadingNoInt64Holds(t *testing.T) {
	for _, c := range []struct {
		usage string
		want  int64 // -1: no reading
	}{
		{`{"input":100,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0.5}`, -1},
		{`{"input":100.7,"output":20.2,"cacheRead":3000,"cacheWrite":7,"totalTokens":0}`, -1},
		{`{"totalTokens":1e300}`, -1},
		{`{"totalTokens":-1e300}`, -1},
		{`{"totalTokens":1e400}`, -1},
		{`{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":9007199254740993}`, 9007199254740992},
		{`{"input":0.5,"output":0.5,"cacheRead":0,"cacheWrite":0,"totalTokens":0}`, 2},
	} {
		file := `{"type":"session","version":3,"id":"s","timestamp":"2026-03-10T09:14:55.120Z","cwd":"/w"}` + "\n" +
			`{"type":"message","id":"a1","parentId":null,"timestamp":"t","message":{"role":"assistant","content":[],"provider":"p","model":"m","usage":` + c.usage + `,"stopReason":"stop"}}` + "\n" +
			`{"type":"message","id":"u1","parentId":"a1","timestamp":"t","message":{"role":"user","content":"qqqq"}}` + "\n"
		end, err := ReadEnd(strings.NewReader(file))
		if err != nil {
			t.Fatalf("usage %s: %v", c.usage, err)
		}
		switch {
		case c.want < 0 && end.Known:
			t.Errorf("usage %s: reading %d tokens, want none (pi's is no int64)", c.usage, end.Tokens)
		case c.want >= 0 && (!end.Known || end.Tokens != c.want):
			t.Errorf("usage %s: reading %d tokens (known %v), want pi's %d", c.usage, end.Tokens, end.Known, c.want)
		}
	}
}

// A message pi's estimateTokens cannot count (a .length of a value that is
// no string or array: NaN; of null or undefined, or a content that is not
// iterable: a TypeError) makes pi's reading no number, or throws, where
// the estimate counts it: after the anchor. End then has no reading. pi
// 0.58.3's answers by tools/pi-end-usage.mjs on the same files (a user
// message, an answer of usage 100, then the line): NaN for the first
// three, a TypeError for the next, and so on as the comments say; where pi
// counts the message, its reading.
func TestReadEndHasNoReadingWherePiCannotCountAMessage(t *testing.T) {
	for _, c := range []struct {
		line string
		want int64 // -1: no reading
	}{
		{`{"type":"branch_summary","id":"b","parentId":"a1","fromId":"root","summary":{}}`, -1},                                                            // NaN
		{`{"type":"branch_summary","id":"b","parentId":"a1","fromId":"root","summary":1}`, -1},                                                             // NaN
		{`{"type":"message","id":"b","parentId":"a1","message":{"role":"user","content":[{"type":"text","text":5}]}}`, -1},                                 // NaN
		{`{"type":"message","id":"b","parentId":"a1","message":{"role":"user","content":[null]}}`, -1},                                                     // TypeError
		{`{"type":"message","id":"b","parentId":"a1","message":{"role":"toolResult","content":5}}`, -1},                                                    // TypeError
		{`{"type":"message","id":"b","parentId":"a1","message":{"role":"toolResult","content":[{"type":"text","text":true}]}}`, -1},                        // NaN
		{`{"type":"message","id":"b","parentId":"a1","message":{"role":"bashExecution","command":"ls"}}`, -1},                                              // TypeError
		{`{"type":"message","id":"b","parentId":"a1","message":{"role":"bashExecution","command":"ls","output":5}}`, -1},                                   // NaN
		{`{"type":"custom_message","id":"b","parentId":"a1","customType":"x","display":true}`, -1},                                                         // TypeError
		{`{"type":"message","id":"b","parentId":"a1","message":{"role":"assistant","content":5,"stopReason":"error"}}`, -1},                                // TypeError
		{`{"type":"message","id":"b","parentId":"a1","message":{"role":"assistant","content":[{"type":"toolCall","name":"x"}],"stopReason":"error"}}`, -1}, // TypeError
		{`{"type":"message","id":"b","parentId":"a1","message":{"role":"user","content":[{"type":"text","text":""},{"type":"text","text":0},{"type":"text"}]}}`, 100},
		{`{"type":"message","id":"b","parentId":"a1","message":{"role":"toolResult","content":[{"type":"text","text":0},{"type":"text","text":"abcd"}]}}`, 101},
		{`{"type":"message","id":"b","parentId":"a1","message":{"role":"assistant","content":"abc","stopReason":"error"}}`, 100},
		{`{"type":"message","id":"b","parentId":"a1","message":{"role":"user","content":{"a":1}}}`, 100},
	} {
		file := strings.Join([]string{
			`{"type":"session","version":3,"id":"s","timestamp":"2026-03-10T09:14:55.120Z","cwd":"/w"}`,
			`{"type":"message","id":"u0","parentId":null,"timestamp":"t","message":{"role":"user","content":"hi"}}`,
			`{"type":"message","id":"a1","parentId":"u0","timestamp":"t","message":{"role":"assistant","content":[],"provider":"p","model":"m","usage":{"totalTokens":100},"stopReason":"stop"}}`,
			c.line, ""}, "\n")
		end, err := ReadEnd(strings.NewReader(file))
		if err != nil {
			t.Fatalf("%s: %v", c.line, err)
		}
		switch {
		case c.want < 0 && end.Known:
			t.Errorf("%s: reading %d tokens, want none (pi's is no number)", c.line, end.Tokens)
		case c.want >= 0 && (!end.Known || end.Tokens != c.want):
			t.Errorf("%s: reading %d tokens (known %v), want pi's %d", c.line, end.Tokens, end.Known, c.want)
		}
	}
	// Before the anchor, pi counts nothing: the answer's usage stands.
	end, err := ReadEnd(strings.NewReader(strings.Join([]string{
		`{"type":"session","version":3,"id":"s","timestamp":"2026-03-10T09:14:55.120Z","cwd":"/w"}`,
		`{"type":"message","id":"u0","parentId":null,"timestamp":"t","message":{"role":"user","content":[null]}}`,
		`{"type":"message","id":"a1","parentId":"u0","timestamp":"t","message":{"role":"assistant","content":[],"provider":"p","model":"m","usage":{"totalTokens":100},"stopReason":"stop"}}`,
		""}, "\n")))
	if err != nil || !end.Known || end.Tokens != 100 {
		t.Errorf("a message pi cannot count before the anchor: %d tokens (known %v, %v), want pi's 100", end.Tokens, end.Known, err)
	}
}

// Where pi cannot load the file, it has no reading: its load throws a
// TypeError on a null line, and on a line that is a number, a string or a
// boolean in a version 1 file (its migration gives each line an id). A
// session line after the header pi skips, and reads on. With a leaf whose
// id is falsy, pi's guard finds no compaction, but a message it cannot
// count still leaves it no number. pi 0.58.3's answers by
// tools/pi-end-usage.mjs: a TypeError, a TypeError, 100, null (NaN), 101.
func TestReadEndHasNoReadingWherePiCannotLoadTheFile(t *testing.T) {
	const (
		h3 = `{"type":"session","version":3,"id":"s","timestamp":"t","cwd":"/w"}`
		u  = `{"type":"message","id":"u1","parentId":null,"message":{"role":"user","content":"hello"}}`
		a  = `{"type":"message","id":"a1","parentId":"u1","message":{"role":"assistant","content":[],"provider":"p","model":"m","usage":{"totalTokens":100},"stopReason":"stop"}}`
	)
	for _, c := range []struct {
		name  string
		lines []string
		want  int64 // -1: no reading
	}{
		{"a null line", []string{h3, u, "null", a}, -1},
		{"a number in a version 1 file", []string{`{"type":"session","id":"s","timestamp":"t","cwd":"/w"}`,
			`{"type":"message","message":{"role":"user","content":"hello"}}`, "5",
			`{"type":"message","message":{"role":"assistant","content":[],"provider":"p","model":"m","usage":{"totalTokens":100},"stopReason":"stop"}}`}, -1},
		{"a session line after the header", []string{h3, u, `{"type":"session","id":"z"}`, a}, 100},
		{"a falsy leaf pi cannot count", []string{h3, u, a, `{"type":"branch_summary","parentId":"a1","fromId":"root","summary":{}}`}, -1},
		{"a falsy leaf", []string{h3, u, a, `{"type":"branch_summary","parentId":"a1","fromId":"root","summary":"abcd"}`}, 101},
	} {
		end, err := ReadEnd(strings.NewReader(strings.Join(c.lines, "\n") + "\n"))
		switch {
		case err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want < 0 && end.Known:
			t.Errorf("%s: a reading of %d tokens, want none (pi has none)", c.name, end.Tokens)
		case c.want >= 0 && (!end.Known || end.Tokens != c.want):
			t.Errorf("%s: %d tokens (known %v), want pi's %d", c.name, end.Tokens, end.Known, c.want)
		}
	}
}
