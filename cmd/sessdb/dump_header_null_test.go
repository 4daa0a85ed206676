package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// dump's header fields are what the header holds as the ladder reads it:
// an id or a timestamp that is empty or not a string is null, and a
// version is a number's whole part, null where it is 0 or no number
// (a string "3"), which docs/json.md did not say: "version":1.5 printed
// 1 and "version":"3" null, a worker could not tell why.
func TestDumpHeaderFieldsAreAsJSONDocSays(t *testing.T) {
	clearEnv(t)
	root := filepath.Join(t.TempDir(), "sessions")
	type fields struct {
		ID        *string `json:"header_id"`
		Version   *int64  `json:"header_version"`
		Timestamp *string `json:"header_timestamp"`
	}
	ival := func(p *int64) string {
		if p == nil {
			return "<null>"
		}
		return fmt.Sprint(*p)
	}
	one, minus2 := int64(1), int64(-2)
	x := "x"
	for i, c := range []struct {
		header string
		want   fields
	}{
		{`{"type":"session","version":0,"id":"","timestamp":""}`, fields{}},
		{`{"type":"session","version":1.5,"id":123,"timestamp":5}`, fields{Version: &one}},
		{`{"type":"session","version":"3","id":"x"}`, fields{ID: &x}},
		{`{"type":"session","version":-2.7}`, fields{Version: &minus2}},
		{`{"type":"session","version":18446744073709551616}`, fields{}},
		{`{"type":"session","version":4611686018427387903}`, fields{}}, // pi's number is 2^62
	} {
		key := fmt.Sprintf("%032x", 0xf00+i)
		dir := filepath.Join(root, key)
		os.MkdirAll(dir, 0o700)
		os.WriteFile(filepath.Join(dir, "current.jsonl"), []byte(c.header+"\n"), 0o600)
		code, out, errs := runCLI(t, "dump", "--json", "--key", key, root)
		var e struct{ Transcript *fields }
		if code != exitOK || json.Unmarshal([]byte(strings.SplitN(out, "\n", 2)[0]), &e) != nil || e.Transcript == nil {
			t.Fatalf("dump %s: exit %d, %s %s", c.header, code, out, errs)
		}
		got, want := *e.Transcript, c.want
		if deref(got.ID) != deref(want.ID) || deref(got.Timestamp) != deref(want.Timestamp) || ival(got.Version) != ival(want.Version) {
			t.Errorf("%s: header_id %s, header_version %s, header_timestamp %s; want %s, %s, %s", c.header, deref(got.ID), ival(got.Version), deref(got.Timestamp), deref(want.ID), ival(want.Version), deref(want.Timestamp))
		}
	}
	docSays(t, "json.md", "| `header_id` | string | yes | the header's id; null when it has none (absent, not a string, or empty) |")
	docSays(t, "json.md", "a number's whole part (`1.5` reads 1, `-2.7` -2); null when absent, `null`, 0, not a number (a string `\"3\"` included) or not within ±2^62 as pi holds it, a float64 (`4611686018427387903` is 2^62) |")
	docSays(t, "json.md", "| `header_timestamp` | string | yes | the header's timestamp, as written; null when absent, not a string, or empty |")
}
