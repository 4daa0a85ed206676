package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A header timestamp passes the age bound when it is in the future, and
// the agent writes it: one whose offset takes it past the year 9999
// ("9999-12-31T23:59-23:59", a date ECMAScript reads) is shown held at
// the end of the range RFC 3339 can write, its text as written beside it.
// Before, dump --json failed on it (Time.MarshalJSON: year outside of
// range), exit 1, and printed no key of the root at all.
func TestDumpJSONShowsATimeBeyondTheYear9999(t *testing.T) {
	clearEnv(t)
	root := t.TempDir()
	for key, ts := range map[string]string{
		"0123456789abcdef0123456789abcdef": "2026-11-01T12:00:00.000Z",
		"1123456789abcdef0123456789abcdef": "9999-12-31T23:59-23:59",
	} {
		if err := os.Mkdir(filepath.Join(root, key), 0o700); err != nil {
			t.Fatal(err)
		}
		header := `{"type":"session","version":3,"id":"x","timestamp":"` + ts + `","cwd":"/w"}` + "\n"
		if err := os.WriteFile(filepath.Join(root, key, "current.jsonl"), []byte(header), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errs := runCLI(t, "dump", "--json", root)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != exitOK || len(lines) != 3 {
		t.Fatalf("dump --json exit %d, %d lines: %s%s", code, len(lines), out, errs)
	}
	var far struct {
		Transcript struct {
			HeaderTimestamp string `json:"header_timestamp"`
			HeaderTime      string `json:"header_time"`
		} `json:"transcript"`
	}
	if err := json.Unmarshal([]byte(lines[1]), &far); err != nil {
		t.Fatal(err)
	}
	if tr := far.Transcript; tr.HeaderTimestamp != "9999-12-31T23:59-23:59" || tr.HeaderTime != "9999-12-31T23:59:59.999999999Z" {
		t.Errorf("transcript = %+v; want the text as written, the time held at 9999-12-31T23:59:59.999999999Z", tr)
	}
}
