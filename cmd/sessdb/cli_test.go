package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sessdb/store"
)

// runCLI runs sessdb with args and returns its exit status, stdout and stderr.
func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	return code, out.String(), errb.String()
}

func clearEnv(t *testing.T) {
	for _, v := range []string{"PI_SESSIONS_DIR", "PI_SESSIONS_TTL_DAYS", "PI_SESSION_MAX_BYTES", "PI_SESSION_MAX_AGE_DAYS", "PI_SESSION_MAX_RESUME_CHAIN", "PI_SESSION_MAX_CONTEXT_PCT"} {
		t.Setenv(v, "")
	}
	for _, k := range bindFleet(flag.NewFlagSet("env", flag.ContinueOnError)).all() {
		t.Setenv(k.env, "")
	}
}

// promoteResult decodes promote's JSON; a null decodes as the zero value.
type promoteResult struct {
	Key          string
	Promoted     bool
	Reason       string
	Bytes        int64
	Gen          uint64
	Run          string
	Repeat       bool
	SupersededBy uint64 `json:"superseded_by"`
	Rewritten    bool
}

const header = `{"type":"session","version":3,"id":"abc","timestamp":"2026-11-01T00:00:00.000Z","cwd":"/w"}` + "\n"

func TestResolvePromoteRoundTrip(t *testing.T) {
	clearEnv(t)
	root := filepath.Join(t.TempDir(), "sessions")
	job := t.TempDir()
	code, out, errs := runCLI(t, "resolve", "--sessions-dir", root, "--kind", "github", "--repo", "acme/widget", "--ref", "pi/issue-1", "--job-dir", job, "--pi-version", "0.58.3")
	if code != exitOK {
		t.Fatalf("resolve exit %d: %s", code, errs)
	}
	var r resolveOutput
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("resolve output %q: %v", out, err)
	}
	if r.Key != store.Key("github", "acme/widget", "pi/issue-1") || r.Resume || r.Reason != "absent" || r.Bytes != 0 {
		t.Fatalf("first resolve = %+v", r)
	}
	if fi, err := os.Stat(r.Staged); err != nil || fi.Size() != 0 {
		t.Fatalf("cold start staged %v, %v; want a 0-byte file", fi, err)
	}
	if _, err := os.Stat(filepath.Join(job, store.TicketName)); err != nil {
		t.Fatalf("no ticket: %v", err)
	}
	os.WriteFile(r.Staged, []byte(header), 0o600)
	code, out, errs = runCLI(t, "promote", "--sessions-dir", root, "--job-dir", job, "--pi-version", "0.58.3", "--context-tokens", "100", "--context-window", "200000")
	var p promoteResult
	if code != exitOK || json.Unmarshal([]byte(out), &p) != nil || !p.Promoted || p.Gen != 1 || p.Bytes != int64(len(header)) {
		t.Fatalf("promote exit %d: %s %s", code, out, errs)
	}

	job2 := t.TempDir()
	t.Setenv("PI_SESSIONS_DIR", root)
	code, out, _ = runCLI(t, "resolve", "--key", r.Key, "--job-dir", job2, "--pi-version", "0.58.3")
	json.Unmarshal([]byte(out), &r)
	if code != exitOK || !r.Resume || r.Reason != "resumed" || r.Bytes != int64(len(header)) {
		t.Fatalf("second resolve exit %d: %+v", code, r)
	}
	if b, _ := os.ReadFile(r.Staged); string(b) != header {
		t.Fatalf("staged %q", b)
	}
	// Every promote outcome exits 0: here, an empty staged file.
	os.WriteFile(r.Staged, nil, 0o600)
	code, out, _ = runCLI(t, "promote", "--job-dir", job2, "--pi-version", "0.58.3")
	json.Unmarshal([]byte(out), &p)
	if code != exitOK || p.Promoted || p.Reason != "absent" {
		t.Fatalf("promote of an empty file: exit %d %s", code, out)
	}
}

func TestConfigurationErrorsNameTheVariable(t *testing.T) {
	root := t.TempDir()
	for _, c := range []struct{ env, val, name string }{
		{"PI_SESSION_MAX_BYTES", "3.5", "PI_SESSION_MAX_BYTES"},
		{"PI_SESSION_MAX_BYTES", "1e3", "PI_SESSION_MAX_BYTES"},
		{"PI_SESSIONS_TTL_DAYS", "08", "PI_SESSIONS_TTL_DAYS"},
		{"PI_SESSIONS_TTL_DAYS", "+3", "PI_SESSIONS_TTL_DAYS"},
		{"PI_SESSION_MAX_RESUME_CHAIN", "-1", "PI_SESSION_MAX_RESUME_CHAIN"},
		{"PI_SESSION_MAX_AGE_DAYS", "3 4", "PI_SESSION_MAX_AGE_DAYS"},
		{"PI_SESSION_MAX_AGE_DAYS", " ", "PI_SESSION_MAX_AGE_DAYS"},
		{"PI_SESSION_MAX_AGE_DAYS", "99999999999", "PI_SESSION_MAX_AGE_DAYS"},
		{"PI_SESSION_MAX_CONTEXT_PCT", "0", "PI_SESSION_MAX_CONTEXT_PCT"},
		{"PI_SESSION_MAX_CONTEXT_PCT", "101", "PI_SESSION_MAX_CONTEXT_PCT"},
	} {
		clearEnv(t)
		t.Setenv(c.env, c.val)
		code, out, errs := runCLI(t, "resolve", "--sessions-dir", root, "--key", strings.Repeat("a", 32), "--job-dir", t.TempDir(), "--pi-version", "1")
		if code != exitUsage || out != "" || !strings.Contains(errs, c.name) || strings.Count(strings.TrimSpace(errs), "\n") != 0 {
			t.Errorf("%s=%q: exit %d, stdout %q, stderr %q; want exit 2 and one line naming %s", c.env, c.val, code, out, errs, c.name)
		}
	}
	clearEnv(t)
	code, _, errs := runCLI(t, "resolve", "--sessions-dir", root, "--max-bytes", "08", "--key", strings.Repeat("a", 32), "--job-dir", t.TempDir(), "--pi-version", "1")
	if code != exitUsage || !strings.Contains(errs, "--max-bytes") {
		t.Errorf("a bad flag: exit %d, %q", code, errs)
	}
}

// Every knob refuses every malformed value the legacy parser refused,
// naming itself; 0 and 101 are errors only for the percentage.
func TestEveryKnobParsesStrictly(t *testing.T) {
	knobs := []string{"PI_SESSIONS_TTL_DAYS", "PI_SESSION_MAX_BYTES", "PI_SESSION_MAX_AGE_DAYS", "PI_SESSION_MAX_RESUME_CHAIN", "PI_SESSION_MAX_CONTEXT_PCT"}
	for _, knob := range knobs {
		for _, val := range []string{"3.5", "1e3", "08", "+3", "-1", "0", "101", "abc", "3 4", "\u00853"} {
			clearEnv(t)
			t.Setenv(knob, val)
			code, _, errs := runCLI(t, "resolve", "--sessions-dir", t.TempDir(), "--key", strings.Repeat("a", 32), "--job-dir", t.TempDir(), "--pi-version", "1")
			ok := val == "0" || val == "101"
			if knob == "PI_SESSION_MAX_CONTEXT_PCT" {
				ok = false
			}
			if ok && code != exitOK {
				t.Errorf("%s=%q refused: %s", knob, val, errs)
			}
			if !ok && (code != exitUsage || !strings.Contains(errs, knob)) {
				t.Errorf("%s=%q: exit %d, %q; want exit 2 naming the variable", knob, val, code, errs)
			}
		}
	}
}

// Whitespace around a whole number is ignored, as the legacy parser
// trimmed it (JavaScript's trim: U+FEFF and U+2028 too, U+0085 not), in
// every variable and every flag that takes one; the value itself is still
// judged strictly.
func TestWholeNumbersIgnoreSurroundingWhitespace(t *testing.T) {
	root := t.TempDir()
	resolve := []string{"resolve", "--sessions-dir", root, "--key", strings.Repeat("a", 32), "--job-dir", t.TempDir(), "--pi-version", "1"}
	for _, knob := range []string{"PI_SESSIONS_TTL_DAYS", "PI_SESSION_MAX_BYTES", "PI_SESSION_MAX_AGE_DAYS", "PI_SESSION_MAX_RESUME_CHAIN", "PI_SESSION_MAX_CONTEXT_PCT"} {
		for _, val := range []string{"14\n", " 14", "\t14\r\n", "\u00a014\ufeff", "14\u2028"} {
			clearEnv(t)
			t.Setenv(knob, val)
			if code, _, errs := runCLI(t, resolve...); code != exitOK {
				t.Errorf("%s=%q: exit %d, %s; want it read as 14", knob, val, code, errs)
			}
		}
	}
	clearEnv(t)
	file := filepath.Join(t.TempDir(), "t.jsonl")
	os.WriteFile(file, []byte(header), 0o600)
	for _, args := range [][]string{
		append(resolve, "--ttl-days", " 3\n", "--max-bytes", "100 ", "--max-age-days", "\n2", "--max-resume-chain", " 1 ", "--max-context-pct", " 50 "),
		{"dump", "--history", " 3\n", root},
		{"migrate", "--dry-run", "--workers", " 2 ", root},
		{"engage", "replay", "--window", " 200000\n", "--reserve", " 16384 ", file},
	} {
		if code, _, errs := runCLI(t, args...); code != exitOK {
			t.Errorf("%q: exit %d, %s; want the numbers read", args, code, errs)
		}
	}
	// Trimmed, not parsed loosely: what remains must be the number itself.
	job := t.TempDir()
	os.WriteFile(filepath.Join(job, "session.ticket"), nil, 0o600)
	for _, args := range [][]string{
		append(resolve, "--ttl-days", " 3 4 "),
		append(resolve, "--max-bytes", "\u00853"),
		{"dump", "--history", " +3", root},
		{"engage", "replay", "--window", "08 ", file},
	} {
		if code, _, _ := runCLI(t, args...); code != exitUsage {
			t.Errorf("%q: exit %d, want 2", args, code)
		}
	}
}

func TestFlagsWinOverEnvironment(t *testing.T) {
	clearEnv(t)
	t.Setenv("PI_SESSION_MAX_BYTES", "not a number")
	code, _, errs := runCLI(t, "resolve", "--sessions-dir", t.TempDir(), "--max-bytes", "100", "--key", strings.Repeat("a", 32), "--job-dir", t.TempDir(), "--pi-version", "1")
	if code != exitOK {
		t.Fatalf("the flag did not win over a bad variable: exit %d %s", code, errs)
	}
}

func TestSessionsDirUnset(t *testing.T) {
	clearEnv(t)
	code, out, errs := runCLI(t, "resolve", "--key", strings.Repeat("a", 32), "--job-dir", t.TempDir(), "--pi-version", "1")
	if code != exitUsage || out != "" || !strings.HasPrefix(errs, "sessdb resolve: sessions-dir-unset") {
		t.Fatalf("exit %d, %q", code, errs)
	}
}

func TestResolveFaultLeavesNoStagedCopy(t *testing.T) {
	clearEnv(t)
	notADir := filepath.Join(t.TempDir(), "file")
	os.WriteFile(notADir, []byte("x"), 0o600)
	job := t.TempDir()
	code, out, errs := runCLI(t, "resolve", "--sessions-dir", notADir, "--key", strings.Repeat("a", 32), "--job-dir", job, "--pi-version", "1")
	if code != exitFault || out != "" || errs == "" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errs)
	}
	if _, err := os.Stat(filepath.Join(job, "session", "current.jsonl")); !os.IsNotExist(err) {
		t.Fatalf("a failed resolve left a staged file: %v", err)
	}
	if _, err := os.Stat(filepath.Join(job, store.TicketName)); !os.IsNotExist(err) {
		t.Fatal("a failed resolve left a ticket")
	}
}

func TestPromoteWithoutTicketIsAFault(t *testing.T) {
	clearEnv(t)
	code, out, _ := runCLI(t, "promote", "--sessions-dir", t.TempDir(), "--job-dir", t.TempDir(), "--pi-version", "1")
	if code != exitFault || out != "" {
		t.Fatalf("exit %d, %q", code, out)
	}
}

func TestUsageErrors(t *testing.T) {
	clearEnv(t)
	for _, args := range [][]string{
		{"nosuch"},
		{"resolve", "--sessions-dir", "x", "--job-dir", "y", "--pi-version", "1"},
		{"resolve", "--sessions-dir", "x", "--key", "NOTAKEY", "--job-dir", "y", "--pi-version", "1"},
		{"resolve", "--sessions-dir", "x", "--key", strings.Repeat("a", 32), "--job-dir", "y"},
		{"promote", "--sessions-dir", "x", "--job-dir", "y", "--pi-version", "1", "--context-tokens", "5", "--context-window", "0"},
		{"promote", "--sessions-dir", "x", "--job-dir", "y", "--pi-version", "1", "--require", "everything"},
		{"dump", "--history", "x", "dir"},
	} {
		if code, _, _ := runCLI(t, args...); code != exitUsage {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
}

func TestDumpSampleIsReadOnly(t *testing.T) {
	clearEnv(t)
	sample := filepath.Join("..", "..", "testdata", "sessions")
	before := tree(t, sample)
	code, out, errs := runCLI(t, "dump", "--json", sample)
	if code != exitOK {
		t.Fatalf("dump exit %d: %s", code, errs)
	}
	var n int
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var r store.KeyReport
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("dump line %q: %v", line, err)
		}
		n++
	}
	if n < 6 {
		t.Fatalf("dump listed %d entries", n)
	}
	if code, out, _ = runCLI(t, "dump", sample); code != exitOK || !strings.Contains(out, "LAYOUT") {
		t.Fatalf("table dump exit %d: %s", code, out)
	}
	if after := tree(t, sample); after != before {
		t.Fatal("dump changed the sample")
	}
}

func tree(t *testing.T, dir string) string {
	var b strings.Builder
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		c, _ := os.ReadFile(p)
		b.WriteString(p + " " + fi.Mode().String() + " " + fi.ModTime().String() + " " + string(c) + "\n")
		return nil
	})
	return b.String()
}

// The key's flags: an empty value counts as not given, and the material is
// all three of --kind, --repo and --ref, as the legacy store derived it,
// but for a local key, whose repository is always "" (legacy-store.md
// 1.1). A missing one is a usage error naming it, never a key no legacy
// job had.
func TestKeyFlags(t *testing.T) {
	clearEnv(t)
	root := t.TempDir()
	key := strings.Repeat("a", 32)
	for _, c := range []struct {
		flags []string
		want  string // the key, or what the one stderr line names
	}{
		{[]string{"--key", key, "--kind="}, key},
		{[]string{"--key", key, "--kind=", "--repo=", "--ref="}, key},
		{[]string{"--kind", "local", "--ref", "cron-1"}, store.Key("local", "", "cron-1")},
		{[]string{"--kind", "github", "--repo", "o/r", "--ref", "b", "--key="}, store.Key("github", "o/r", "b")},
		{[]string{"--kind", "github", "--ref", "b"}, "--repo is required"},
		{[]string{"--kind", "github", "--repo", "o/r"}, "--ref is required"},
		{[]string{"--repo", "o/r", "--ref", "b"}, "--kind is required"},
		{[]string{"--kind", "github", "--repo=", "--ref", "b"}, "--repo is required"},
		{[]string{"--kind", "local", "--repo", "o/r", "--ref", "cron-1"}, "--repo \"o/r\": a local key has no repository"},
		{[]string{"--key", key, "--ref", "b"}, "not both"},
		{[]string{"--key=", "--kind="}, "a key is required"},
	} {
		args := append([]string{"resolve", "--sessions-dir", root, "--job-dir", t.TempDir(), "--pi-version", "1"}, c.flags...)
		code, out, errs := runCLI(t, args...)
		var r resolveOutput
		if store.ValidKey(c.want) {
			if code != exitOK || json.Unmarshal([]byte(out), &r) != nil || r.Key != c.want {
				t.Errorf("%q: exit %d, %s%s; want key %s", c.flags, code, out, errs, c.want)
			}
			continue
		}
		if code != exitUsage || out != "" || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, c.want) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit 2 and one line saying %s", c.flags, code, out, errs, c.want)
		}
	}
}
