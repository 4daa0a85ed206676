package main

import (
	"encoding/json"
	"strings"
	"testing"

	"sessdb/store"
)

// docs/json.md: a record's name in etcd that is not UTF-8 is never a key;
// dump --json shows U+FFFD for each byte that is not UTF-8 (two such
// names can read the same), and the table shows each byte as \xNN, so
// the two are told apart there. Names with quotes, newlines and escapes
// come out as JSON that decodes to them. Nothing of it fails the dump.
func TestFleetRecordNamesThatAreNotUTF8(t *testing.T) {
	f := startFleet(t)
	key := store.Key("github", "acme/widget", "pi/names")
	f.run(t, key, "job-1")
	hostile := "quo\"te\nnl\x1b[31m"
	for _, n := range []string{"bad\xffname", "bad\xfename", hostile} {
		if _, err := f.c.Client(t).Put(t.Context(), f.prefix+"/record/"+n, "junk"); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errs := runCLI(t, "dump", "--json")
	if code != exitOK || errs != "" || strings.Count(out, `{"key":"bad\ufffdname","problem":"not a key",`) != 2 {
		t.Errorf("dump --json: exit %d, want the two names as bad\\ufffdname, not a key\n%s%s", code, out, errs)
	}
	names := map[string]bool{}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	for _, l := range lines {
		var e struct{ Key string }
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatalf("dump --json: %v: %s", err, l)
		}
		names[e.Key] = true
	}
	if !names[hostile] || !names[key] || len(lines) != 5 {
		t.Errorf("dump --json: names %v, want %q and the key among 4 entries and a summary", names, hostile)
	}
	code, out, errs = runCLI(t, "dump")
	for _, want := range []string{`bad\xffname`, `bad\xfename`, `quo"te\nnl\x1b[31m`} {
		if code != exitOK || errs != "" || !strings.Contains(out, want+" ") {
			t.Errorf("dump: exit %d, want %s in the table\n%s%s", code, want, out, errs)
		}
	}
}
