package transcript

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func scanAll(t *testing.T, r io.Reader) (*Scanner, []Entry) {
	t.Helper()
	s := NewScanner(r)
	var out []Entry
	for s.Next() {
		out = append(out, *s.Entry())
	}
	return s, out
}

func scanFixture(t *testing.T, name string) (*Scanner, []Entry) {
	t.Helper()
	f, err := os.Open(filepath.Join(shared(t, "pi-fixtures"), name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return scanAll(t, f)
}

// Line accounting from EXPECTED.md.
func TestScanFixtureStats(t *testing.T) {
	cases := []struct {
		file                             string
		lines, blank, malformed, entries int64
		firstLine, lastLine              int64
		version                          int64
	}{
		// 9 physical lines, the last cut mid-JSON and dropped; 7 entries.
		{"05-truncated-midline.jsonl", 9, 0, 1, 7, 2, 8, 3},
		// 14 lines; 2 blank; 4 malformed; header plus 7 entries.
		{"07-dropped-lines.jsonl", 14, 2, 4, 7, 2, 11, 3},
		// The unknown-type line is kept: 8 entries.
		{"07b-kept-unknown-type.jsonl", 9, 0, 0, 8, 2, 9, 3},
		{"01-normal-multiturn.jsonl", 17, 0, 0, 16, 2, 17, 3},
		{"08-v1-legacy.jsonl", 10, 0, 0, 9, 2, 10, 1},
		{"09-v2-hookmessage.jsonl", 8, 0, 0, 7, 2, 8, 2},
	}
	for _, c := range cases {
		s, es := scanFixture(t, c.file)
		st := s.Stats()
		if s.Err() != nil || st.Lines != c.lines || st.Blank != c.blank || st.Malformed != c.malformed || st.Entries != c.entries || int64(len(es)) != c.entries || st.NotEntries != 0 {
			t.Errorf("%s: %+v, %d entries, err %v", c.file, st, len(es), s.Err())
			continue
		}
		if es[0].Line != c.firstLine || es[len(es)-1].Line != c.lastLine || s.Version() != c.version {
			t.Errorf("%s: lines %d..%d, version %d", c.file, es[0].Line, es[len(es)-1].Line, s.Version())
		}
	}
}

// 07: the last assistant is entry index 7 for "index + 2" recall references
// (#8), but its physical line is 11 (pi.md 5.6).
func TestScanPhysicalLines(t *testing.T) {
	_, es := scanFixture(t, "07-dropped-lines.jsonl")
	last := es[len(es)-1]
	if last.ID != "128b2f33" || last.Line != 11 || last.Index != 7 {
		t.Errorf("last entry %s at line %d index %d, want 128b2f33 at line 11, index 7", last.ID, last.Line, last.Index)
	}
}

func TestScanInvalid(t *testing.T) {
	cases := []struct {
		file     string
		err      error
		line     int64
		typ      string
		unparsed int64
	}{
		{"04a-bad-header-missing.jsonl", ErrNoHeader, 1, "message", 0},
		{"04b-bad-header-id-not-string.jsonl", ErrHeaderID, 1, "", 0},
		{"04c-bad-header-unparseable.jsonl", ErrNoHeader, 2, "message", 1},
		{"04d-empty.jsonl", ErrEmpty, 0, "", 0},
	}
	for _, c := range cases {
		s, es := scanFixture(t, c.file)
		var inv *InvalidError
		if !errors.As(s.Err(), &inv) || !errors.Is(s.Err(), c.err) || len(es) != 0 {
			t.Errorf("%s: %v with %d entries, want %v", c.file, s.Err(), len(es), c.err)
			continue
		}
		if inv.Line != c.line || inv.Type != c.typ || inv.Unparsed != c.unparsed {
			t.Errorf("%s: %+v", c.file, inv)
		}
		if _, err := s.Header(); err == nil {
			t.Errorf("%s: Header() reports no error", c.file)
		}
	}
	for in, want := range map[string]error{
		" \n\t\n\u00a0\n":                   ErrEmpty,
		"not json\n{also not\n":             ErrNotJSON,
		`[1,2]` + "\n":                      ErrNoHeader,
		`{"type":"session"}` + "\n":         ErrHeaderID,
		`{"type":"session","id":null}`:      ErrHeaderID,
		`{"type":"Session","id":"x"}`:       ErrNoHeader,
		"\uFEFF\uFEFF" + `{"type":"x"}`:     ErrNoHeader,
		`{"id":"x","type":"session"}` + "}": ErrNotJSON,
	} {
		s, _ := scanAll(t, strings.NewReader(in))
		if !errors.Is(s.Err(), want) {
			t.Errorf("%q: %v, want %v", in, s.Err(), want)
		}
		if s.Err() != nil && !strings.HasPrefix(s.Err().Error(), "not a pi transcript: ") {
			t.Errorf("%q: message %q", in, s.Err())
		}
	}
}

const hdr = `{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}`

// pi trims the whole file before splitting it, so a BOM or Unicode spaces
// before the header, and trailing Unicode spaces after the last line, are
// harmless; the same characters on any other line make JSON.parse drop it.
func TestScanTrimAndBlankLines(t *testing.T) {
	msg := func(id string) string {
		return `{"type":"message","id":"` + id + `","parentId":null,"message":{"role":"user","content":"hi"}}`
	}
	cases := []struct {
		name                      string
		in                        string
		ids                       string
		blank, malformed, entries int64
	}{
		{"BOM and spaces before the header", "\n \uFEFF\u00a0" + hdr + "\n" + msg("a"), "a", 1, 0, 1},
		{"CRLF everywhere", hdr + "\r\n" + msg("a") + "\r\n\r\n" + msg("b") + "\r\n", "a b", 1, 0, 2},
		{"Unicode blank lines", hdr + "\n\u2028\n\u3000\t\n" + msg("a"), "a", 2, 0, 1},
		{"NBSP after the last line", hdr + "\n" + msg("a") + "\n" + msg("b") + "\u00a0\u2029\n \n", "a b", 1, 0, 2},
		{"NBSP after a middle line", hdr + "\n" + msg("a") + "\u00a0\n" + msg("b"), "b", 0, 1, 1},
		{"NBSP then garbage", hdr + "\n" + msg("a") + "\u00a0\nnope", "", 0, 2, 0},
		{"garbage first line, header second", "garbage\n" + hdr + "\n" + msg("a"), "a", 0, 1, 1},
		{"BOM on a later line", hdr + "\n\uFEFF" + msg("a") + "\n" + msg("b"), "b", 0, 1, 1},
		{"no trailing newline", hdr + "\n" + msg("a"), "a", 0, 0, 1},
	}
	for _, c := range cases {
		s, es := scanAll(t, strings.NewReader(c.in))
		var ids []string
		for _, e := range es {
			ids = append(ids, e.ID)
		}
		st := s.Stats()
		if s.Err() != nil || strings.Join(ids, " ") != c.ids || st.Blank != c.blank || st.Malformed != c.malformed || st.Entries != c.entries {
			t.Errorf("%s: ids %q, %+v, err %v", c.name, ids, st, s.Err())
		}
	}
}

// Valid JSON that is not an object is an entry to pi 0.58.3, with no id
// and no type: it pushes every value JSON.parse returns into its entries.
// So is an object without an id, or with an id that is not a string. null
// is not: pi's index reads null.type and throws, and the scanner drops it.
// Nor is a session line after the header, which pi skips.
func TestScanNotEntries(t *testing.T) {
	in := hdr + "\n42\nnull\n\"s\"\n[1]\n{}\n" +
		`{"type":"message","id":7,"parentId":1.5,"message":{"role":"user","content":"x"}}` + "\n" +
		`{"type":"message","id":"a","parentId":null,"message":{"role":"user","content":"x"}}` + "\n" +
		`{"type":"session","id":"again","parentId":"a"}` + "\n"
	s, es := scanAll(t, strings.NewReader(in))
	st := s.Stats()
	var got []string
	for _, e := range es {
		got = append(got, fmt.Sprintf("%d:%s:%q<%q", e.Index, e.Type, e.ID, e.ParentID))
	}
	want := `1::""<"",3::""<"",4::""<"",5::""<"",6:message:"7"<"1.5",7:message:"a"<""`
	if s.Err() != nil || st.NotEntries != 2 || st.Dropped() != 2 || st.Entries != 6 || strings.Join(got, ",") != want {
		t.Errorf("%+v, err %v\ngot  %s\nwant %s", st, s.Err(), strings.Join(got, ","), want)
	}
	if es[4].idKind != idNumber || es[4].parentKind != idNumber || es[5].idKind != idString {
		t.Errorf("kinds %d<%d, %d", es[4].idKind, es[4].parentKind, es[5].idKind)
	}
}

// pi's v1 -> v2 migration: every object but a session line gets an id and
// the previous one as parent; firstKeptEntryIndex (header = 0) becomes
// firstKeptEntryId when it points back at such an entry.
func TestScanVersion1(t *testing.T) {
	_, es := scanFixture(t, "08-v1-legacy.jsonl")
	for i, e := range es {
		wantParent := ""
		if i > 0 {
			wantParent = es[i-1].ID
		}
		if e.ID != v1ID(i+1) || e.ParentID != wantParent {
			t.Errorf("entry %d: id %q parent %q", i, e.ID, e.ParentID)
		}
	}
	// EXPECTED.md: index 6 resolves to the user entry "Make the base delay
	// configurable." (33 characters).
	c := es[len(es)-2]
	if c.Type != "compaction" || !c.HasFirstKept || c.FirstKeptEntryID != v1ID(6) || es[5].Message.Role != "user" || es[5].Message.Content.Text != 33 {
		t.Errorf("compaction %+v; entry at index 6: %+v", c, es[5])
	}

	v1 := `{"type":"session","id":"s"}` + "\n" +
		`{"type":"message","message":{"role":"user","content":"a"}}` + "\n" + // index 1
		`{"type":"session","note":"no id"}` + "\n" + // index 2: skipped by the migration
		`{}` + "\n" + // index 3: an object, so it gets an id
		`{"type":"compaction","summary":"s","firstKeptEntryIndex":2}` + "\n" + // points at the session line
		`{"type":"compaction","summary":"s","firstKeptEntryIndex":3,"firstKeptEntryId":"zzz"}` + "\n" +
		`{"type":"compaction","summary":"s","firstKeptEntryIndex":6}` + "\n" + // itself
		`{"type":"compaction","summary":"s","firstKeptEntryIndex":0}` + "\n" + // the header
		`{"type":"compaction","summary":"s","firstKeptEntryIndex":99}` + "\n" +
		`{"type":"message","id":"own","parentId":"x","message":{"role":"hookMessage","content":"b"}}` + "\n"
	s, es := scanAll(t, strings.NewReader(v1))
	var got []string
	for _, e := range es {
		got = append(got, e.ID+"<"+e.ParentID+":"+e.FirstKeptEntryID)
	}
	want := "v1:1<:,v1:3<v1:1:,v1:4<v1:3:,v1:5<v1:4:v1:3,v1:6<v1:5:,v1:7<v1:6:,v1:8<v1:7:,v1:9<v1:8:"
	if strings.Join(got, ",") != want || s.Stats().NotEntries != 1 {
		t.Errorf("got  %s\nwant %s\n%+v", strings.Join(got, ","), want, s.Stats())
	}
	if es[len(es)-1].Message.Role != "custom" {
		t.Errorf("v1 hookMessage role %q, want migrated to custom", es[len(es)-1].Message.Role)
	}

	// pi's migration gives an array an id like any object (a compaction can
	// keep from it), and throws on a string, a number or a boolean, which
	// the scanner drops.
	v1 = `{"type":"session","id":"s"}` + "\n" +
		`{"type":"message","message":{"role":"user","content":"a"}}` + "\n" + // index 1
		`[1]` + "\n" + // index 2
		`"x"` + "\n" + `7` + "\n" + `true` + "\n" + // indexes 3 to 5: pi throws
		`{"type":"compaction","summary":"s","firstKeptEntryIndex":2}` + "\n"
	s, es = scanAll(t, strings.NewReader(v1))
	got = got[:0]
	for _, e := range es {
		got = append(got, e.ID+"<"+e.ParentID+":"+e.FirstKeptEntryID)
	}
	want = "v1:1<:,v1:2<v1:1:,v1:6<v1:2:v1:2"
	if strings.Join(got, ",") != want || s.Stats().NotEntries != 3 {
		t.Errorf("got  %s\nwant %s\n%+v", strings.Join(got, ","), want, s.Stats())
	}
}

func TestScanVersion2And4(t *testing.T) {
	_, es := scanFixture(t, "09-v2-hookmessage.jsonl")
	if es[3].Message.Role != "custom" || es[3].Message.Content.String != int64(len("Reminder: the repo uses golangci-lint v1.59 with .golangci.yml.")) {
		t.Errorf("v2 hookMessage: %+v", es[3].Message)
	}
	// pi: version = header.version ?? 1, then "if version < 2" and "if
	// version < 3" decide the migrations, coercing by ToNumber; 4 is loaded
	// as is. Each value that is not a number was checked against pi 0.58.3
	// (which migrations it ran on a branched file).
	for version, want := range map[string]int64{
		`4`: 4, `3`: 3, `3.5`: 3, `1e300`: 3, `2.9999999999999999`: 3,
		`2`: 2, `2.5`: 2, `1.5`: 1, `1`: 1, `0`: 1, `-1`: 1, `null`: 1,
		`"3"`: 3, `"1"`: 1, `" 1 "`: 1, `"1e0"`: 1, `".5"`: 1, `"+.5"`: 1, `"1e-400"`: 1, `"-Infinity"`: 1,
		`""`: 1, `"  "`: 1, `"0b1"`: 1, `"+2"`: 2, `"0x2"`: 2, `"0B10"`: 2, `"0o2"`: 2, `"2.9999"`: 2,
		`"00002"`: 2, `"\ufeff2"`: 2, `"\u20282\u3000"`: 2, `"5."`: 5, `"0x1F"`: 31, `"Infinity"`: 3,
		`"-0x1"`: 3, `"2_0"`: 3, `"\u200b2"`: 3, `"\u00852"`: 3, `"infinity"`: 3, `"0x"`: 3, `"2e"`: 3, `"-"`: 3, `"."`: 3,
		`true`: 1, `false`: 1, `[]`: 1, `[null]`: 1, `[[]]`: 1, `[[2]]`: 2, `[2.5]`: 2, `[" 2\n"]`: 2,
		`["1",[]]`: 3, `[true]`: 3, `{}`: 3, `{"valueOf":1}`: 3, `"0x\u0010"`: 3, `"0X1g"`: 3, `"1e5_"`: 3,
	} {
		in := `{"type":"session","version":` + version + `,"id":"s"}` + "\n" + `{"type":"message","id":"a","message":{"role":"hookMessage"}}`
		s, es := scanAll(t, strings.NewReader(in))
		if s.Version() != want || len(es) != 1 || (es[0].Message.Role == "custom") != (want < 3) {
			t.Errorf("version %s: read as %d (want %d), entries %+v", version, s.Version(), want, es)
		}
	}
}

func TestScanLineTooLong(t *testing.T) {
	long := `{"type":"message","id":"a","message":{"role":"user","content":"` + strings.Repeat("x", 200<<10) + `"}}`
	for _, limit := range []int{100, 150 << 10} {
		s := NewScanner(strings.NewReader(hdr + "\n" + long + "\n"))
		s.maxLine = limit
		for s.Next() {
		}
		if !errors.Is(s.Err(), ErrLineTooLong) || !strings.HasPrefix(s.Err().Error(), "line 2: ") {
			t.Errorf("limit %d: %v", limit, s.Err())
		}
	}
	// The message is what a CLI user reads (engage replay, dump): it names
	// the limit in bytes a user can compare with the file, not a Go name.
	if msg := ErrLineTooLong.Error(); !strings.Contains(msg, "64 MiB") {
		t.Errorf("ErrLineTooLong says %q: want the limit, 64 MiB", msg)
	}
	// Under the limit, a line longer than the read buffer is assembled.
	s, es := scanAll(t, strings.NewReader(hdr+"\n"+long+"\n"+long))
	if s.Err() != nil || len(es) != 2 || es[1].Message.Content.String != 200<<10 {
		t.Errorf("%v, %d entries", s.Err(), len(es))
	}
}

func TestScanReadError(t *testing.T) {
	boom := errors.New("boom")
	s, es := scanAll(t, io.MultiReader(strings.NewReader(hdr+"\n{\"type\":\"x\",\"id\":\"a\"}\n{\"ty"), &failing{boom}))
	if !errors.Is(s.Err(), boom) || len(es) != 1 || !strings.HasPrefix(s.Err().Error(), "line 3: ") {
		t.Errorf("%v after %d entries", s.Err(), len(es))
	}
	if h, err := s.Header(); err != nil || h.ID != "s" {
		t.Errorf("Header after a later read error: %+v %v", h, err)
	}
}

func FuzzScanner(f *testing.F) {
	f.Add([]byte(hdr + "\n" + `{"type":"message","id":"a","message":{"role":"assistant","content":[{"type":"toolCall","name":"n","arguments":{"a": [1, "\u2028"]}}]}}`))
	f.Add([]byte("\uFEFF" + hdr + "\u00a0"))
	f.Add([]byte(`{"type":"session","id":"s"}` + "\n{}\n" + `{"type":"compaction","firstKeptEntryIndex":1}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s := NewScanner(strings.NewReader(string(data)))
		n := int64(0)
		for s.Next() {
			n++
			if e := s.Entry(); e.Line < 2 || e.Line > s.Stats().Lines {
				t.Fatalf("entry on line %d of %d", e.Line, s.Stats().Lines)
			}
		}
		st := s.Stats()
		header := int64(0)
		if s.Err() == nil {
			header = 1
		}
		if st.Entries != n || st.Blank+st.Malformed+st.NotEntries+st.Entries+header > st.Lines {
			t.Fatalf("%+v with %d entries, err %v", st, n, s.Err())
		}
	})
}

// Header of a file whose first value is no session header is the zero
// Header and the scan's error, never the fields of the line it read
// (mutation sweep: Header's return on a bad header dropped, which gave
// the non-header's fields and no error; no test asked a bad file for its
// header through the scanner).
func TestScannerHeaderOfNoHeader(t *testing.T) {
	s := NewScanner(strings.NewReader(`{"type":"message","id":"m","version":3}` + "\n"))
	if h, err := s.Header(); !errors.Is(err, ErrNoHeader) || h != (Header{}) {
		t.Errorf("Header = %+v, %v; want the zero Header, ErrNoHeader", h, err)
	}
}

// A number is pi's as JavaScript tests it: 1 is truthy, an id looked up
// by its string "1", a summary that is there; 0 is falsy, no id at all,
// no summary (mutation sweep: ident's and truthy's `f != 0` made
// `f != 1`, which took 0 for a value and dropped 1; the other tests'
// numbers were 7 and 1.5).
func TestScanNumbersZeroAndOne(t *testing.T) {
	in := hdr + "\n" +
		`{"type":"message","id":1,"parentId":0,"message":{"role":"user","content":"x"}}` + "\n" +
		`{"type":"message","id":0,"parentId":1,"message":{"role":"user","content":"y"}}` + "\n" +
		`{"type":"compaction","id":"c0","parentId":"x","summary":0}` + "\n" +
		`{"type":"compaction","id":"c1","parentId":"x","summary":1}` + "\n"
	s, es := scanAll(t, strings.NewReader(in))
	if s.Err() != nil || len(es) != 4 {
		t.Fatalf("%d entries, %v", len(es), s.Err())
	}
	if e := es[0]; e.ID != "1" || e.idKind != idNumber || e.ParentID != "" || e.parentKind != idNone {
		t.Errorf("id 1, parentId 0: %q (%d) < %q (%d); want \"1\" (number) < none", e.ID, e.idKind, e.ParentID, e.parentKind)
	}
	if e := es[1]; e.ID != "" || e.idKind != idNone || e.ParentID != "1" || e.parentKind != idNumber {
		t.Errorf("id 0, parentId 1: %q (%d) < %q (%d); want none < \"1\" (number)", e.ID, e.idKind, e.ParentID, e.parentKind)
	}
	if es[2].HasSummary || !es[3].HasSummary {
		t.Errorf("summary 0: HasSummary %v, summary 1: %v; want false, true", es[2].HasSummary, es[3].HasSummary)
	}
}

// A line of exactly the limit is read; one byte more is too long, short
// lines and lines longer than the read buffer alike (mutation sweep: the
// check's `len(b) > s.maxLine` made `>=`, which refused a line of exactly
// the limit: no test sat on the boundary).
func TestScanLineOfExactlyTheLimit(t *testing.T) {
	for _, n := range []int{100, 200 << 10} {
		line := `{"type":"message","id":"a","message":{"role":"user","content":"` + strings.Repeat("x", n) + `"}}`
		for _, limit := range []int{len(line), len(line) - 1} {
			s := NewScanner(strings.NewReader(hdr + "\n" + line + "\n"))
			s.maxLine = max(limit, len(hdr))
			for s.Next() {
			}
			if tooLong := errors.Is(s.Err(), ErrLineTooLong); tooLong != (limit < len(line)) || !tooLong && s.Err() != nil {
				t.Errorf("a line of %d bytes, limit %d: %v", len(line), limit, s.Err())
			}
		}
	}
}

// A version 1 compaction's firstKeptEntryIndex that is no whole number
// keeps nothing: pi reads entries[1.5], undefined (mutation sweep: the
// index's integer check made an `||`, which took 1.5 for index 1; the
// tests' indexes were whole).
func TestScanVersion1FractionalFirstKeptIndex(t *testing.T) {
	v1 := `{"type":"session","id":"s"}` + "\n" +
		`{"type":"message","message":{"role":"user","content":"a"}}` + "\n" + // index 1
		`{"type":"message","message":{"role":"user","content":"b"}}` + "\n" + // index 2
		`{"type":"compaction","summary":"s","firstKeptEntryIndex":1.5}` + "\n"
	s, es := scanAll(t, strings.NewReader(v1))
	if s.Err() != nil || len(es) != 3 {
		t.Fatalf("%d entries, %v", len(es), s.Err())
	}
	if c := es[2]; c.HasFirstKept || c.FirstKeptEntryID != "" {
		t.Errorf("firstKeptEntryIndex 1.5 kept from %q; want nothing", c.FirstKeptEntryID)
	}
}

// A message that is not an object is skipped whole, and the keys after it
// are read: the entry keeps its id and parent (mutation sweep: the skip
// of the non-object message deleted, which read its string as the next
// key and lost the id; no test had a message that is no object before
// other keys).
func TestScanMessageThatIsNoObject(t *testing.T) {
	in := hdr + "\n" +
		`{"type":"message","id":"u","parentId":null,"message":{"role":"user","content":"x"}}` + "\n" +
		`{"type":"message","message":"not an object","id":"a","parentId":"u"}` + "\n"
	s, es := scanAll(t, strings.NewReader(in))
	if s.Err() != nil || len(es) != 2 {
		t.Fatalf("%d entries, %v", len(es), s.Err())
	}
	if e := es[1]; e.ID != "a" || e.ParentID != "u" || e.Message.Role != "" {
		t.Errorf("entry after a string message: id %q parent %q role %q; want a < u, no role", e.ID, e.ParentID, e.Message.Role)
	}
}

// A compaction's firstKeptEntryId that is null, absent or an object keeps
// nothing; a string does (mutation sweep: HasFirstKept's
// `kind >= idString && kind != idObject` made `||`, which took null for
// a kept id; the tests' ids were strings).
func TestScanFirstKeptEntryIDKinds(t *testing.T) {
	in := hdr + "\n" +
		`{"type":"compaction","id":"c1","parentId":null,"summary":"s","firstKeptEntryId":null}` + "\n" +
		`{"type":"compaction","id":"c2","parentId":"c1","summary":"s","firstKeptEntryId":{}}` + "\n" +
		`{"type":"compaction","id":"c3","parentId":"c2","summary":"s","firstKeptEntryId":"c1"}` + "\n"
	s, es := scanAll(t, strings.NewReader(in))
	if s.Err() != nil || len(es) != 3 {
		t.Fatalf("%d entries, %v", len(es), s.Err())
	}
	if es[0].HasFirstKept || es[1].HasFirstKept || !es[2].HasFirstKept {
		t.Errorf("HasFirstKept null %v, object %v, string %v; want false, false, true", es[0].HasFirstKept, es[1].HasFirstKept, es[2].HasFirstKept)
	}
}

// InvalidError names the entry found instead of a header when there is a
// type to name, and the unparsed header line whatever its number, line 1
// included (mutation sweep: the ErrNoHeader case's `&&` made `||`, which
// named an empty type, `a "" entry`; `Unparsed > 0` made `> 1`, which
// left out line 1, the line it nearly always is; no test read these
// messages).
func TestInvalidErrorMessages(t *testing.T) {
	for _, c := range []struct {
		e    InvalidError
		want string
	}{
		{InvalidError{Err: ErrNoHeader, Line: 2, Type: "message", Unparsed: 1},
			`not a pi transcript: line 2: first entry is a "message" entry, not a session header (line 1, the header line, is not JSON)`},
		// A first line with no type (`{}`): no type to name.
		{InvalidError{Err: ErrNoHeader, Line: 1},
			"not a pi transcript: line 1: " + ErrNoHeader.Error()},
	} {
		if got := c.e.Error(); got != c.want {
			t.Errorf("%+v: %q, want %q", c.e, got, c.want)
		}
	}
}

// A version given as a hex string is read as JavaScript's Number reads
// it, every hex digit included: "0x9" is 9, "0xf" and "0xF" 15, each a
// version above 3, read as is (mutation sweep: the digit ranges' `<= '9'`
// and `<= 'f'` made `<`, which read "0x9" and "0xf" as NaN, version 3;
// the versions tested were "0x2" and below).
func TestScanHexVersionDigits(t *testing.T) {
	for version, want := range map[string]int64{`"0x9"`: 9, `"0xf"`: 15, `"0xF"`: 15, `"0x2"`: 2} {
		s := NewScanner(strings.NewReader(`{"type":"session","version":` + version + `,"id":"s"}` + "\n"))
		if _, err := s.Header(); err != nil {
			t.Fatalf("version %s: %v", version, err)
		}
		if got := s.Version(); got != want {
			t.Errorf("version %s read as %d, want %d", version, got, want)
		}
	}
}

// The read buffer is 64 KiB and MaxLineBytes a multiple of it, so a long
// line's assembled prefix lands on the limit exactly: a longer line is
// still too long, and a line of exactly the limit is one line, the next
// numbered after it (mutation sweep: the assembling loop's
// `len(s.long) <= s.maxLine` made `<` stopped at the limit, returned the
// line's first 64 MiB as a line and read its tail as the next; the tests'
// limits were no multiple of the buffer).
func TestScanLineAtALimitOfWholeBuffers(t *testing.T) {
	const limit = 128 << 10 // two buffers, as 64 MiB is 1024
	entry := func(n int) string {
		head := `{"type":"message","id":"a","message":{"role":"user","content":"`
		return head + strings.Repeat("x", n-len(head)-3) + `"}}` // n bytes
	}
	next := `{"type":"message","id":"b","parentId":"a","message":{"role":"user","content":"y"}}`
	s := NewScanner(strings.NewReader(hdr + "\n" + entry(limit+100<<10) + "\n" + next + "\n"))
	s.maxLine = limit
	n := 0
	for s.Next() {
		n++
	}
	if !errors.Is(s.Err(), ErrLineTooLong) || !strings.HasPrefix(s.Err().Error(), "line 2: ") || n != 0 {
		t.Errorf("a line of %d bytes, limit %d: %d entries, %v; want line 2 too long", limit+100<<10, limit, n, s.Err())
	}
	s = NewScanner(strings.NewReader(hdr + "\n" + entry(limit) + "\n" + next + "\n"))
	s.maxLine = limit
	var es []Entry
	for s.Next() {
		es = append(es, *s.Entry())
	}
	if s.Err() != nil || len(es) != 2 || es[0].Message.Content.String != int64(limit-66) || es[1].Line != 3 || s.Stats().Lines != 3 {
		t.Errorf("a line of exactly the limit, %d bytes: %v, %d entries, stats %+v", limit, s.Err(), len(es), s.Stats())
		for _, e := range es {
			t.Errorf("  entry %s, line %d, content %d", e.ID, e.Line, e.Message.Content.String)
		}
	}
}

// A version 1 compaction's firstKeptEntryIndex past what an int holds on a
// 32-bit host (2^31 and up) keeps nothing there, as pi, whose entries
// array has no such index, keeps nothing: the index is not wrapped into
// one of the entries the file has.
func TestScanVersion1FirstKeptIndexPastAnInt(t *testing.T) {
	for _, index := range []string{"2147483648", "4294967297", "4294967298", "9007199254740991"} {
		v1 := `{"type":"session","id":"s"}` + "\n" +
			`{"type":"message","message":{"role":"user","content":"a"}}` + "\n" + // index 1
			`{"type":"message","message":{"role":"user","content":"b"}}` + "\n" + // index 2
			`{"type":"compaction","summary":"s","firstKeptEntryIndex":` + index + `}` + "\n"
		s, es := scanAll(t, strings.NewReader(v1))
		if s.Err() != nil || len(es) != 3 {
			t.Fatalf("%s: %d entries, %v", index, len(es), s.Err())
		}
		if c := es[2]; c.HasFirstKept || c.FirstKeptEntryID != "" {
			t.Errorf("firstKeptEntryIndex %s kept from %q; want nothing", index, c.FirstKeptEntryID)
		}
	}
}
