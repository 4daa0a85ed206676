package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sessdb/store"
)

// check --repair's `repair` is null for a notice no repair touches (a
// name that is not a key, an entry the store does not write), and a
// problem no repair is safe for says so ("left as is: …"). docs/json.md
// said that with --repair it is what was done or why nothing was, null
// only without --repair, so a worker reading every finding's repair
// under --repair met nulls it was told it would not.
func TestCheckRepairIsNullForANoticeItLeavesAlone(t *testing.T) {
	clearEnv(t)
	root := filepath.Join(t.TempDir(), "sessions")
	key := store.Key("github", "acme/repair", "pi/1")
	t.Setenv("PI_SESSIONS_DIR", root)
	job := filepath.Join(t.TempDir(), "job")
	if code, _, errs := runCLI(t, "resolve", "--key", key, "--job-dir", job, "--pi-version", "1"); code != exitOK {
		t.Fatalf("resolve: %s", errs)
	}
	os.WriteFile(filepath.Join(job, "session", "current.jsonl"), []byte(header), 0o600)
	if code, out, errs := runCLI(t, "promote", "--job-dir", job, "--pi-version", "1"); code != exitOK || !strings.Contains(out, `"promoted":true`) {
		t.Fatalf("promote: %d %s %s", code, out, errs)
	}
	os.Mkdir(filepath.Join(root, "not-a-key"), 0o700)
	os.WriteFile(filepath.Join(root, key, "notes.txt"), []byte("the operator's"), 0o600)
	// A transcript changed out of band: a problem check --repair leaves.
	os.WriteFile(filepath.Join(root, key, "current.jsonl"), []byte(header+header), 0o600)
	code, out, errs := runCLI(t, "check", "--json", "--repair")
	if code != exitIssues {
		t.Fatalf("check --repair: exit %d, %s\n%s", code, errs, out)
	}
	got := map[string]*string{}
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		var f struct {
			Kind   string
			Repair *string
		}
		if err := json.Unmarshal([]byte(line), &f); err != nil {
			t.Fatalf("check line %q: %v", line, err)
		}
		if f.Kind != "" {
			got[f.Kind] = f.Repair
		}
	}
	for _, kind := range []string{"not-a-key", "unknown-entry"} {
		if r, ok := got[kind]; !ok || r != nil {
			t.Errorf("%s under --repair: repair %v (found %v), want null", kind, deref(r), ok)
		}
	}
	if r := got["transcript-mismatch"]; r == nil || !strings.HasPrefix(*r, "left as is: ") {
		t.Errorf("transcript-mismatch under --repair: repair %q, want left as is: …", deref(r))
	}
	docSays(t, "json.md", "null without `--repair`, and with it for a notice a repair leaves alone (a name that is not a key, an entry the store does not write, a quarantined dir, a meta.db moved aside, a legacy lock or temp, `legacy-leftover`)")
}
