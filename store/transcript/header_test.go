package transcript

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// ReadHeader judges the first line as the legacy store's JSON.parse did.
func TestReadHeader(t *testing.T) {
	pi := `{"type":"session","version":3,"id":"7f3c","timestamp":"2026-03-10T09:14:55.120Z","cwd":"/w"}`
	cases := []struct {
		name    string
		in      string
		want    Header
		session bool
		err     error
	}{
		{"pi header", pi + "\n{}\n", Header{Type: "session", Version: 3, ID: "7f3c", IDIsString: true, Timestamp: "2026-03-10T09:14:55.120Z", TimestampIsString: true}, true, nil},
		{"CRLF", pi + "\r\n", Header{Type: "session", Version: 3, ID: "7f3c", IDIsString: true, Timestamp: "2026-03-10T09:14:55.120Z", TimestampIsString: true}, true, nil},
		{"no newline at all", pi, Header{Type: "session", Version: 3, ID: "7f3c", IDIsString: true, Timestamp: "2026-03-10T09:14:55.120Z", TimestampIsString: true}, true, nil},
		{"JSON whitespace around", " \t" + `{"type":"session"}` + " \r\n", Header{Type: "session"}, true, nil},
		{"v1: no version", `{"type":"session","id":"x"}`, Header{Type: "session", ID: "x", IDIsString: true}, true, nil},
		{"id not a string", `{"type":"session","id":48151623}`, Header{Type: "session"}, true, nil},
		{"timestamp not a string", `{"type":"session","timestamp":1773134115200}`, Header{Type: "session"}, true, nil},
		{"version not a number", `{"type":"session","version":"3"}`, Header{Type: "session"}, true, nil},
		{"version null", `{"type":"session","version":null}`, Header{Type: "session"}, true, nil},
		{"type not session", `{"type":"message","id":"a"}`, Header{Type: "message", ID: "a", IDIsString: true}, false, nil},
		{"type not a string", `{"type":["session"]}`, Header{}, false, nil},
		{"keys are case-sensitive", `{"Type":"session"}`, Header{}, false, nil},
		{"escaped key and value", `{"\u0074ype":"sess\u0069on"}`, Header{Type: "session"}, true, nil},
		{"a repeated key: the last wins", `{"type":"session","type":"x"}`, Header{Type: "x"}, false, nil},
		{"a number", "42\n", Header{}, false, nil},
		{"an array", `["session"]`, Header{}, false, nil},
		{"a string", `"session"`, Header{}, false, nil},
		{"null", "null", Header{}, false, nil},
		{"empty reader", "", Header{}, false, ErrEmpty},
		{"empty first line", "\n" + pi, Header{}, false, ErrNotJSON},
		{"missing brace (04c)", `{"type":"session","id":"x"` + "\n{}", Header{}, false, ErrNotJSON},
		{"BOM: JSON.parse rejects it", "\uFEFF" + pi, Header{}, false, ErrNotJSON},
		{"trailing garbage", pi + "x\n", Header{}, false, ErrNotJSON},
		// JSON.parse nests without a limit (encoding/json stops at 10000).
		{"a field nested deeper than 10000", `{"type":"session","x":` + strings.Repeat("[", 10001) + strings.Repeat("]", 10001) + `,"version":3}`, Header{Type: "session", Version: 3}, true, nil},
	}
	for _, c := range cases {
		h, err := ReadHeader(strings.NewReader(c.in))
		if !errors.Is(err, c.err) || (c.err == nil && err != nil) {
			t.Errorf("%s: err %v, want %v", c.name, err, c.err)
			continue
		}
		if h != c.want || h.IsSession() != c.session {
			t.Errorf("%s: %+v (session %v), want %+v (session %v)", c.name, h, h.IsSession(), c.want, c.session)
		}
	}
	_, err := ReadHeader(strings.NewReader("{\n"))
	var syn *json.SyntaxError
	if !errors.As(err, &syn) {
		t.Errorf("ErrNotJSON does not wrap the parser's error: %v", err)
	}
}

func TestReadHeaderBound(t *testing.T) {
	line := func(n int) string { // a header line of exactly n bytes
		h := `{"type":"session","id":"x","cwd":""}`
		return h[:len(h)-2] + strings.Repeat("a", n-len(h)) + `"}`
	}
	if h, err := ReadHeader(strings.NewReader(line(MaxHeaderBytes) + "\n")); err != nil || !h.IsSession() {
		t.Errorf("a header of exactly MaxHeaderBytes: %v", err)
	}
	if h, err := ReadHeader(strings.NewReader(line(MaxHeaderBytes))); err != nil || !h.IsSession() {
		t.Errorf("a header of exactly MaxHeaderBytes at EOF: %v", err)
	}
	if _, err := ReadHeader(strings.NewReader(line(MaxHeaderBytes+1) + "\n")); !errors.Is(err, ErrHeaderTooLong) {
		t.Errorf("one byte over: %v", err)
	}
	if _, err := ReadHeader(strings.NewReader(line(MaxHeaderBytes + 1))); !errors.Is(err, ErrHeaderTooLong) {
		t.Errorf("one byte over at EOF: %v", err)
	}

	// Never more than MaxHeaderBytes+1 bytes from a reader with no newline,
	// and no more than one small chunk past a short first line.
	cr := &countingReader{r: io.MultiReader(strings.NewReader("{"), endless{})}
	if _, err := ReadHeader(cr); !errors.Is(err, ErrHeaderTooLong) || cr.n > MaxHeaderBytes+1 {
		t.Errorf("endless line: %v after %d bytes", err, cr.n)
	}
	cr = &countingReader{r: io.MultiReader(strings.NewReader(`{"type":"session"}`+"\n"), endless{})}
	if _, err := ReadHeader(cr); err != nil || cr.n > 4096 {
		t.Errorf("short header before an endless body: %v after %d bytes", err, cr.n)
	}
	// A reader handing out one byte at a time still works.
	h, err := ReadHeader(&oneByte{r: strings.NewReader(`{"type":"session","id":"a"}` + "\nrest")})
	if err != nil || h.ID != "a" {
		t.Errorf("one byte at a time: %+v %v", h, err)
	}
	boom := errors.New("boom")
	if _, err := ReadHeader(io.MultiReader(strings.NewReader("{"), &failing{boom})); !errors.Is(err, boom) {
		t.Errorf("read error: %v", err)
	}
	if _, err := ReadHeader(stuck{}); !errors.Is(err, io.ErrNoProgress) {
		t.Errorf("a reader that never progresses: %v", err)
	}
}

type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

type endless struct{}

func (endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	return len(p), nil
}

type oneByte struct{ r io.Reader }

func (o *oneByte) Read(p []byte) (int, error) { return o.r.Read(p[:min(1, len(p))]) }

type failing struct{ err error }

func (f *failing) Read([]byte) (int, error) { return 0, f.err }

type stuck struct{}

func (stuck) Read([]byte) (int, error) { return 0, nil }

// The fixtures' first lines, as the store's unparseable gate sees them.
func TestReadHeaderFixtures(t *testing.T) {
	dir := shared(t, "pi-fixtures")
	cases := map[string]struct {
		session, idString bool
		version           int64
		err               error
	}{
		"01-normal-multiturn.jsonl":          {true, true, 3, nil},
		"04a-bad-header-missing.jsonl":       {false, true, 0, nil},
		"04b-bad-header-id-not-string.jsonl": {true, false, 3, nil},
		"04c-bad-header-unparseable.jsonl":   {false, false, 0, ErrNotJSON},
		"04d-empty.jsonl":                    {false, false, 0, ErrEmpty},
		"06-ancient-header-timestamp.jsonl":  {true, true, 3, nil},
		"08-v1-legacy.jsonl":                 {true, true, 0, nil},
		"09-v2-hookmessage.jsonl":            {true, true, 2, nil},
	}
	for name, c := range cases {
		f, err := os.Open(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		h, err := ReadHeader(f)
		f.Close()
		if !errors.Is(err, c.err) || (c.err == nil && err != nil) || h.IsSession() != c.session || h.IDIsString != c.idString || h.Version != c.version {
			t.Errorf("%s: %+v, %v", name, h, err)
		}
	}
	// Fixture 06's header clock is 1999 (EXPECTED.md: SessionInfo.created).
	f, _ := os.Open(filepath.Join(dir, "06-ancient-header-timestamp.jsonl"))
	defer f.Close()
	h, _ := ReadHeader(f)
	if ts, ok := ParseTimestamp(h.Timestamp); !ok || !ts.Equal(time.Date(1999, 12, 31, 23, 59, 59, 0, time.UTC)) {
		t.Errorf("06 timestamp %q: %v %v", h.Timestamp, ts, ok)
	}
}

func TestParseTimestamp(t *testing.T) {
	utc := func(y int, mo time.Month, d, h, mi, s, ms int) time.Time {
		return time.Date(y, mo, d, h, mi, s, ms*1e6, time.UTC)
	}
	good := map[string]time.Time{
		"2026-03-10T09:14:55.120Z":      utc(2026, 3, 10, 9, 14, 55, 120),
		"2026-03-10T09:14:55Z":          utc(2026, 3, 10, 9, 14, 55, 0),
		"2026-03-10T09:14Z":             utc(2026, 3, 10, 9, 14, 0, 0),
		"2026-03-10T09:14:55.1Z":        utc(2026, 3, 10, 9, 14, 55, 100),
		"2026-03-10T09:14:55.123456Z":   utc(2026, 3, 10, 9, 14, 55, 123),
		"2026-03-10T11:14:55.120+02:00": utc(2026, 3, 10, 9, 14, 55, 120),
		"2026-03-10T04:44:55-04:30":     utc(2026, 3, 10, 9, 14, 55, 0),
		"2026-03-10":                    utc(2026, 3, 10, 0, 0, 0, 0),
		"2026-03-10T09:14:55":           utc(2026, 3, 10, 9, 14, 55, 0), // no zone: read as UTC
		"2026-02-30T00:00:00Z":          utc(2026, 3, 2, 0, 0, 0, 0),    // rolled over as V8 does
		"1999-12-31T23:59:59.000Z":      utc(1999, 12, 31, 23, 59, 59, 0),
	}
	for s, want := range good {
		if got, ok := ParseTimestamp(s); !ok || !got.Equal(want) {
			t.Errorf("ParseTimestamp(%q) = %v, %v; want %v", s, got, ok, want)
		}
	}
	for _, s := range []string{"", "garbage", "2026", "2026-03", "2026-13-01", "2026-00-10", "2026-03-32", "2026-03-00",
		"2026-03-10T24:00Z", "2026-03-10T09:60Z", "2026-03-10T09:14:60Z", "2026-03-10t09:14Z", "2026-03-10T09:14:55.Z",
		"2026-03-10T09:14:55.120z", "2026-03-10 09:14:55Z", "2026-03-10T09:14:55+0200", "2026-03-10T09:14:55+24:00",
		"2026-03-10T09:14:55Z ", " 2026-03-10", "+2026-03-10", "2026-3-10", "Tue, 10 Mar 2026 09:14:55 GMT",
		// A date missing its year or its first '-' (mutation sweep: the
		// date's `ok1 && ok2` made `||` read these as 2026-03-10 and
		// 0000-03-10; node 20's Date reads the first as 1 October of
		// year 202603, the last as 2001-03-10: no ISO form either way).
		"202603-10", "202603-10T09:14Z", "-03-10"} {
		if got, ok := ParseTimestamp(s); ok {
			t.Errorf("ParseTimestamp(%q) = %v, want not ok", s, got)
		}
	}
}

func FuzzReadHeader(f *testing.F) {
	f.Add([]byte(`{"type":"session","version":3,"id":"x"}` + "\n"))
	f.Add([]byte("42"))
	f.Add([]byte("{\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		cr := &countingReader{r: bytes.NewReader(data)}
		h, err := ReadHeader(cr)
		if cr.n > MaxHeaderBytes+1 {
			t.Fatalf("read %d bytes", cr.n)
		}
		line, _, _ := bytes.Cut(data, []byte{'\n'})
		if err == nil && !json.Valid(line) {
			t.Fatalf("accepted %q", line)
		}
		if h.IsSession() {
			var m map[string]any
			if json.Unmarshal(line, &m) != nil || m["type"] != "session" {
				t.Fatalf("%q is a session header to ReadHeader but not to encoding/json", line)
			}
		}
	})
}
