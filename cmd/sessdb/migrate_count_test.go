package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sessdb/store"
)

// TestMigratesSummaryCountsOneEntryInTheSingular: a root of one entry is
// "over 1 entry", in a dry run, a run and a rollback, as check's and
// stats' summaries count it; two are "over 2 entries".
func TestMigratesSummaryCountsOneEntryInTheSingular(t *testing.T) {
	root := filepath.Join(t.TempDir(), "sessions")
	dir := filepath.Join(root, store.Key("github", "acme/widget", "pi/issue-1"))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]string{"current.jsonl": header, "pi-version": "0.58.3", "venue": "local"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"--dry-run", root}, {root}, {"--to-legacy", "--dry-run", root}, {"--to-legacy", root}} {
		code, out, errb := runMigrateCLI(t, args...)
		if code != exitOK || !strings.Contains(out, " over 1 entry in ") || strings.Contains(out, "1 entries") {
			t.Errorf("migrate %q: exit %d, want 0 and \"over 1 entry in\"\n%s%s", args, code, out, errb)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "README.txt"), []byte("not a key dir\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out, errb := runMigrateCLI(t, root); code != exitOK || !strings.Contains(out, " over 2 entries in ") {
		t.Errorf("migrate of two entries: exit %d, want 0 and \"over 2 entries in\"\n%s%s", code, out, errb)
	}
}
