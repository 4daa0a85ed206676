package engage

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"unicode/utf8"

	"sessdb/internal/sharedtest"
	"sessdb/store/transcript"
)

// FuzzReadReplay gives `sessdb engage` any file as a transcript, as an
// operator may point it at any file: Read refuses it as not a transcript
// (a *transcript.InvalidError) or a cycle (ErrCycle), or reads it; one it
// reads replays under the default options, with no more requests than the
// branch has entries, and its table, JSON and SVG are what a terminal,
// a JSON reader and an SVG viewer take: valid UTF-8 of printable
// characters and line ends only (an id or a model name is the writer's
// choice), a JSON value a line, well-formed XML.
func FuzzReadReplay(f *testing.F) {
	var seeds []string
	for _, dir := range []string{filepath.Join("..", "store", "transcript", "testdata", "end"), sharedtest.Locate("pi")} {
		if dir == "" {
			continue
		}
		ps, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
		seeds = append(seeds, ps...)
	}
	for _, p := range seeds {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		if len(b) <= 64<<10 {
			f.Add(b)
		}
	}
	f.Add([]byte(nil))
	f.Add([]byte(`{"type":"session","version":3,"id":"x","timestamp":"2026-11-01T12:00:00.000Z","cwd":"/"}` + "\n" +
		`{"type":"message","id":"\u001b[2J","parentId":"\u001b[2J","message":{"role":"assistant","content":[],"provider":"<p>","model":"\u202e&","usage":{"totalTokens":5},"stopReason":"stop"}}` + "\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		tr, err := Read(bytes.NewReader(data))
		if err != nil {
			var inv *transcript.InvalidError
			if !errors.As(err, &inv) && !errors.Is(err, ErrCycle) {
				t.Fatalf("refused as %v: neither not a transcript nor a cycle", err)
			}
			return
		}
		rp, err := tr.Replay(DefaultOptions())
		if err != nil {
			t.Fatalf("replay under the default options: %v", err)
		}
		if len(rp.Rows) > tr.Branch {
			t.Fatalf("%d requests on a branch of %d entries", len(rp.Rows), tr.Branch)
		}
		prices := &Prices{CacheRead: 0.3, CacheWrite: 3.75}
		for name, write := range map[string]func(io.Writer) error{
			"table": func(w io.Writer) error { return rp.WriteTable(w, prices) },
			"json":  func(w io.Writer) error { return rp.WriteJSON(w, prices) },
			"svg":   func(w io.Writer) error { return rp.WriteSVG(w, "a\x1b]0;name\a.jsonl", prices) },
		} {
			var out bytes.Buffer
			if err := write(&out); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			b := out.Bytes()
			if !utf8.Valid(b) || bytes.ContainsFunc(b, func(r rune) bool { return r != '\n' && !strconv.IsPrint(r) }) {
				t.Fatalf("%s: not printable text:\n%q", name, b)
			}
			switch name {
			case "json":
				for _, line := range bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n")) {
					if !json.Valid(line) {
						t.Fatalf("json: a line that is not JSON:\n%s", line)
					}
				}
			case "svg":
				d := xml.NewDecoder(bytes.NewReader(b))
				for {
					if _, err := d.Token(); err == io.EOF {
						break
					} else if err != nil {
						t.Fatalf("svg: not well-formed XML: %v", err)
					}
				}
			}
		}
	})
}
