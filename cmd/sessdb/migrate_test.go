package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sessdb/migrate"
	"sessdb/store"
)

func runMigrateCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(append([]string{"migrate"}, args...), &out, &errb)
	return code, out.String(), errb.String()
}

// legacyRoot lays out a sessions root as the legacy worker left it: a
// plain key, one with odd values, and one a legacy promotion holds.
func legacyRoot(t *testing.T) (root, plain, odd, locked string) {
	t.Helper()
	root = filepath.Join(t.TempDir(), "sessions")
	plain, odd, locked = store.Key("github", "acme/widget", "pi/issue-1"), store.Key("github", "acme/widget", "pi/issue-2"), store.Key("github", "acme/widget", "pi/issue-3")
	hour := time.Now().Add(-time.Hour)
	for key, files := range map[string]map[string]string{
		plain:  {"pi-version": "0.58.3", "venue": "local", "resume-chain": "1", "context": "1000 200000 anthropic/claude-sonnet-4-5"},
		odd:    {"pi-version": "0.58.3\n", "venue": "", "resume-chain": "007", "context": "abc", "lock": ""},
		locked: {"pi-version": "0.58.3", "lock": ""},
	} {
		dir := filepath.Join(root, key)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		files["current.jsonl"] = header
		for name, data := range files {
			p := filepath.Join(dir, name)
			if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
				t.Fatal(err)
			}
			at := hour
			if name == "lock" && key == odd {
				at = time.Now().Add(-2 * time.Hour) // stale: removed with the rest
			}
			if name == "lock" && key == locked {
				at = time.Now() // a live legacy promotion
			}
			os.Chtimes(p, at, at)
		}
	}
	return root, plain, odd, locked
}

// migrateTree hashes and stats every entry under root: bytes, modes and
// mtimes.
func migrateTree(t *testing.T, root string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s %v %d %d", p, fi.Mode(), fi.Size(), fi.ModTime().UnixNano())
		if fi.Mode().IsRegular() {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			fmt.Fprintf(&b, " %x", sha256.Sum256(data))
		}
		b.WriteByte('\n')
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestMigrateUsage(t *testing.T) {
	root := t.TempDir()
	for _, args := range [][]string{{}, {root, root}, {"--workers", "0", root}, {"--workers", "08", root}, {"--workers", "65", root}, {"--nope", root}} {
		if code, _, errs := runMigrateCLI(t, args...); code != exitUsage || errs == "" {
			t.Errorf("%q: exit %d, stderr %q", args, code, errs)
		}
	}
	if code, _, errs := runMigrateCLI(t, filepath.Join(root, "missing")); code != exitFault || !strings.Contains(errs, "missing") {
		t.Errorf("a missing DIR: exit %d, %q", code, errs)
	}
	var out bytes.Buffer
	if code := run([]string{"help", "migrate"}, &out, &out); code != exitOK || !strings.Contains(out.String(), "--to-legacy") {
		t.Errorf("help migrate: %d %q", code, out.String())
	}
}

func TestMigrateDryRunJSON(t *testing.T) {
	root, _, odd, locked := legacyRoot(t)
	before := migrateTree(t, root)
	code, out, errs := runMigrateCLI(t, "--dry-run", "--json", root)
	if after := migrateTree(t, root); after != before {
		t.Fatalf("the dry run changed the tree:\n%s\n%s", before, after)
	}
	// A locked key is one migrate could not do: exit 1, the fault status
	// of every command (issue 12: it was 3, which is check's).
	if code != exitFault || !strings.Contains(errs, locked+": locked: ") {
		t.Fatalf("exit %d (want %d: a key is locked): %s", code, exitFault, errs)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 4 {
		t.Fatalf("want 3 reports and a summary, got:\n%s", out)
	}
	byKey := map[string]migrate.Report{}
	for _, l := range lines[:3] {
		var r migrate.Report
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("%q: %v", l, err)
		}
		byKey[r.Key] = r
	}
	var sum struct{ Summary migrate.Summary }
	if err := json.Unmarshal([]byte(lines[3]), &sum); err != nil || sum.Summary.Migrated != 2 || sum.Summary.Locked != 1 || !sum.Summary.DryRun {
		t.Fatalf("summary %q: %v", lines[3], err)
	}
	r := byKey[odd]
	if r.Action != migrate.Migrated || *r.Values.Venue != "(pending)" || *r.Values.ResumeChain != 0 || r.Values.Context != nil || r.Values.PiVersion != "0.58.3" {
		t.Fatalf("odd key: %+v", r)
	}
	found := map[string]bool{}
	for _, o := range r.Oddities {
		found[o.File] = true
	}
	for _, f := range []string{"venue", "pi-version", "resume-chain", "context", "lock"} {
		if !found[f] {
			t.Errorf("no oddity reported for %s: %+v", f, r.Oddities)
		}
	}
	if byKey[locked].Action != migrate.Locked {
		t.Errorf("locked key: %+v", byKey[locked])
	}
}

func TestMigrateRunRerunRollback(t *testing.T) {
	clearEnv(t)
	root, plain, odd, locked := legacyRoot(t)
	resolveReason := func(key string) string {
		_, out, _ := runCLI(t, "resolve", "--sessions-dir", root, "--key", key, "--job-dir", t.TempDir(), "--pi-version", "0.58.3", "--ttl-days", "0")
		var r resolveOutput
		json.Unmarshal([]byte(out), &r)
		return fmt.Sprintf("%v %s", r.Resume, r.Reason)
	}
	want := map[string]string{plain: "true resumed", odd: "false venue-changed", locked: "true resumed"}
	check := func(phase string) {
		for k, w := range want {
			if got := resolveReason(k); got != w {
				t.Errorf("%s: %s resolves %s, want %s", phase, k, got, w)
			}
		}
	}
	check("legacy")

	code, out, _ := runMigrateCLI(t, "--workers", "2", root)
	if code != exitFault || !strings.Contains(out, plain+"  migrate") || !strings.Contains(out, locked+"  locked") ||
		!strings.Contains(out, "venue: empty file -> no value") || !strings.Contains(out, "1 locked, 0 failed") {
		t.Fatalf("migrate: exit %d\n%s", code, out)
	}
	if _, err := os.Stat(filepath.Join(root, plain, "venue")); !os.IsNotExist(err) {
		t.Errorf("venue left beside meta.db: %v", err)
	}
	check("migrated")

	os.Remove(filepath.Join(root, locked, "lock")) // the legacy promotion finished
	if code, out, _ := runMigrateCLI(t, root); code != exitOK || !strings.Contains(out, "1 migrate, 2 already") {
		t.Fatalf("re-run: exit %d\n%s", code, out)
	}
	before := migrateTree(t, root)
	if code, out, _ := runMigrateCLI(t, root); code != exitOK || !strings.Contains(out, "0 migrate, 3 already") || migrateTree(t, root) != before {
		t.Fatalf("third run: exit %d, or the tree changed\n%s", code, out)
	}

	if code, out, _ := runMigrateCLI(t, "--to-legacy", root); code != exitOK || !strings.Contains(out, "writes pi-version venue resume-chain") {
		t.Fatalf("rollback: exit %d\n%s", code, out)
	}
	if b, err := os.ReadFile(filepath.Join(root, odd, "venue")); err != nil || string(b) != "(pending)" {
		t.Errorf("rolled back venue %q, %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(root, plain, "meta.db")); !os.IsNotExist(err) {
		t.Errorf("meta.db left after the rollback: %v", err)
	}
	check("rolled back")
}
