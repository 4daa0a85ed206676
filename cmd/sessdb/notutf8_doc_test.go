package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// docs/json.md says how a string that is not UTF-8 is written, and its
// examples are what sessdb prints: a name, a file's name in a path and a
// header's id get one U+FFFD for each byte that is not UTF-8, and a
// legacy stamp the value the ladder compares, decoded as Node decoded it
// (one U+FFFD for a cut-short character). The page said so of names
// only, so a worker reading a legacy key's venue could not know that
// "v\xe2\x80x" reads with one stand-in where a name with the same bytes
// has two.
func TestStringsNotUTF8AreWrittenAsJSONDocSays(t *testing.T) {
	clearEnv(t)
	root := filepath.Join(t.TempDir(), "sessions")
	key := strings.Repeat("e7", 16)
	dir := filepath.Join(root, key)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(root, "n\xe2\x80x"), 0o700); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"current.jsonl": `{"type":"session","version":3,"id":"i` + "\xe2\x80" + `x","timestamp":"2026-11-01T00:00:00.000Z","cwd":"/w"}` + "\n",
		"venue":         "v\xe2\x80x",
		"pi-version":    "0.58.3",
		"s\xe2\x80x":    "not the store's",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}

	code, out, errs := runCLI(t, "dump", "--json", root)
	if code != exitOK {
		t.Fatalf("dump: exit %d, %s", code, errs)
	}
	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		var e struct {
			Key        *string
			Venue      *string
			Transcript *struct {
				HeaderID *string `json:"header_id"`
			}
		}
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("dump line %q: %v", line, err)
		}
		switch {
		case e.Key == nil: // the summary
		case *e.Key == key:
			got["venue"], got["header_id"] = deref(e.Venue), deref(e.Transcript.HeaderID)
		default:
			got["name"] = *e.Key
		}
	}
	code, out, errs = runCLI(t, "check", "--json", root)
	if code != exitOK {
		t.Fatalf("check: exit %d, %s", code, errs)
	}
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		var f struct{ Path, Kind string }
		json.Unmarshal([]byte(line), &f)
		if f.Kind == "unknown-entry" {
			got["path"] = f.Path
		}
	}
	for field, want := range map[string]string{
		"name":      "n\ufffd\ufffdx",
		"header_id": "i\ufffd\ufffdx",
		"path":      key + "/s\ufffd\ufffdx",
		"venue":     "v\ufffdx",
	} {
		if got[field] != want {
			t.Errorf("%s = %q, want %q", field, got[field], want)
		}
	}

	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "json.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Join(strings.Fields(string(doc)), " ")
	for _, says := range []string{
		"a venue file holding `v\\xe2\\x80x` reads `v\\ufffdx`, where a name `n\\xe2\\x80x` reads `n\\ufffd\\ufffdx`",
		"one U+FFFD for each byte that is not UTF-8: a file's name in a `path`, a transcript header's `header_id`",
	} {
		if !strings.Contains(text, says) {
			t.Errorf("docs/json.md does not say %q", says)
		}
	}
}

func deref(s *string) string {
	if s == nil {
		return "<null>"
	}
	return *s
}
