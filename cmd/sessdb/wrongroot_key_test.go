package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A promote whose ticket names another sessions root exits 2 and writes
// nothing; its stderr line is about the ticket's key, and names it in the
// message, so its JSON key field carries it too (docs/json.md: "the key
// or path the line is about"), as every other line promote writes about a
// key does: a worker that reads stderr by key must find this one.
func TestWrongRootLineCarriesTheKey(t *testing.T) {
	clearEnv(t)
	rootA, rootB := filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")
	for _, r := range []string{rootA, rootB} {
		if err := os.Mkdir(r, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	job := t.TempDir()
	key := strings.Repeat("a", 32)
	if code, _, errs := runCLI(t, "resolve", "--sessions-dir", rootA, "--key", key, "--job-dir", job, "--pi-version", "1"); code != exitOK {
		t.Fatalf("resolve: exit %d: %s", code, errs)
	}
	code, out, errs := runCLI(t, "promote", "--sessions-dir", rootB, "--job-dir", job, "--pi-version", "1", "--log-format", "json")
	var line map[string]any
	if err := json.Unmarshal([]byte(errs), &line); code != exitUsage || out != "" || err != nil || strings.Count(errs, "\n") != 1 {
		t.Fatalf("promote on another root: exit %d, stdout %q, stderr %q; want 2 and one JSON line", code, out, errs)
	}
	if line["key"] != key || !strings.Contains(line["message"].(string), "another sessions root") {
		t.Errorf("the line %v: want key %q and the refusal", line, key)
	}
}
