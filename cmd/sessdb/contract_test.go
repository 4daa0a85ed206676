package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The job contract through the CLI (issue 11): what a runner sees.
func TestCLIJobContract(t *testing.T) {
	clearEnv(t)
	root := filepath.Join(t.TempDir(), "sessions")
	key := strings.Repeat("c0", 16)
	resolve := func(job string) {
		t.Helper()
		if code, _, errs := runCLI(t, "resolve", "--sessions-dir", root, "--key", key, "--job-dir", job, "--pi-version", "0.58.3", "--job", filepath.Base(job)); code != exitOK {
			t.Fatalf("resolve: %s", errs)
		}
	}
	promote := func(job string, extra ...string) (int, promoteResult, string) {
		t.Helper()
		code, out, errs := runCLI(t, append([]string{"promote", "--sessions-dir", root, "--job-dir", job, "--pi-version", "0.58.3"}, extra...)...)
		var p promoteResult
		if code == exitOK {
			if err := json.Unmarshal([]byte(out), &p); err != nil {
				t.Fatalf("promote output %q: %v", out, err)
			}
		}
		return code, p, errs
	}
	appendTurn := func(job, text string, answered bool) {
		t.Helper()
		p := filepath.Join(job, "session", "current.jsonl")
		data, _ := os.ReadFile(p)
		if len(data) == 0 {
			data = []byte(header)
		}
		data = append(data, `{"type":"message","id":"u-`+text+`","parentId":null,"timestamp":"2026-11-01T00:00:01.000Z","message":{"role":"user","content":"`+text+`"}}`+"\n"...)
		if answered {
			data = append(data, `{"type":"message","id":"a-`+text+`","parentId":"u-`+text+`","timestamp":"2026-11-01T00:00:02.000Z","message":{"role":"assistant","content":[{"type":"text","text":"ok"}],"provider":"anthropic","model":"claude-sonnet-4-5","usage":{"input":1,"output":1,"cacheRead":0,"cacheWrite":0,"totalTokens":2},"stopReason":"stop"}}`+"\n"...)
		}
		os.WriteFile(p, data, 0o600)
	}

	first := filepath.Join(t.TempDir(), "first")
	resolve(first)
	appendTurn(first, "one", true)
	if code, p, errs := promote(first); code != exitOK || !p.Promoted || p.Gen != 1 || p.Run != "answered" {
		t.Fatalf("first promote: %d %+v %s", code, p, errs)
	}

	b, c := filepath.Join(t.TempDir(), "job-b"), filepath.Join(t.TempDir(), "job-c")
	resolve(b)
	resolve(c)
	appendTurn(b, "b", true)
	appendTurn(c, "c", false)
	if code, p, _ := promote(b); code != exitOK || !p.Promoted || p.Gen != 2 {
		t.Fatalf("B: %d %+v", code, p)
	}
	code, p, _ := promote(c)
	if code != exitOK || p.Promoted || p.Reason != "superseded" || p.SupersededBy != 2 {
		t.Fatalf("C after B: exit %d %+v, want superseded by 2", code, p)
	}
	if code, p, _ := promote(b); code != exitOK || !p.Promoted || !p.Repeat || p.Gen != 2 {
		t.Fatalf("B retried: exit %d %+v, want a repeat of gen 2", code, p)
	}
	code, out, _ := runCLI(t, "dump", "--history", "10", "--json", root)
	if code != exitOK || !strings.Contains(out, "superseded") || !strings.Contains(out, "job-c") {
		t.Fatalf("dump --history does not show the refusal with its job:\n%s", out)
	}

	// Another root: exit 2, both named, nothing written there.
	other := filepath.Join(t.TempDir(), "other")
	d := filepath.Join(t.TempDir(), "job-d")
	resolve(d)
	appendTurn(d, "d", false)
	code, _, errs := runCLI(t, "promote", "--sessions-dir", other, "--job-dir", d, "--pi-version", "0.58.3")
	if code != exitUsage || !strings.Contains(errs, other) || !strings.Contains(errs, root) {
		t.Fatalf("promote into another root: exit %d, %s", code, errs)
	}
	if _, err := os.Stat(other); !os.IsNotExist(err) {
		t.Fatal("the other root was created")
	}
	// --require answered refuses an unanswered run, and so does the variable.
	if code, p, _ := promote(d, "--require", "answered"); code != exitOK || p.Reason != "run-incomplete" || p.Run != "unanswered" {
		t.Fatalf("--require answered: %d %+v", code, p)
	}
	t.Setenv("PI_SESSION_PROMOTE_REQUIRE", "answered")
	if code, p, _ := promote(d); code != exitOK || p.Reason != "run-incomplete" {
		t.Fatalf("PI_SESSION_PROMOTE_REQUIRE=answered: %d %+v", code, p)
	}
	t.Setenv("PI_SESSION_PROMOTE_REQUIRE", "sometimes")
	if code, _, errs := promote(d); code != exitUsage || !strings.Contains(errs, "PI_SESSION_PROMOTE_REQUIRE") {
		t.Fatalf("a bad PI_SESSION_PROMOTE_REQUIRE: exit %d %s", code, errs)
	}
}

// A run sessdb cannot read as pi does (here a branch that loops; a line
// over 64 MiB is the same case, store's TestPromoteALineOverTheScannerBound)
// is "run":"unknown" in promote's JSON, exit 0 like every outcome: never
// "unanswered", which tells a runner the run was cut short. --require
// answered refuses it, as it refuses every run not known to have answered,
// and a promote without it then promotes the run.
func TestCLIRunUnknown(t *testing.T) {
	clearEnv(t)
	root := filepath.Join(t.TempDir(), "sessions")
	job := filepath.Join(t.TempDir(), "job")
	if code, _, errs := runCLI(t, "resolve", "--sessions-dir", root, "--key", strings.Repeat("d0", 16), "--job-dir", job, "--pi-version", "0.58.3"); code != exitOK {
		t.Fatalf("resolve: %s", errs)
	}
	// The answer is the prompt's parent, and the prompt the answer's.
	loop := header +
		`{"type":"message","id":"u-1","parentId":"a-1","timestamp":"2026-11-01T00:00:01.000Z","message":{"role":"user","content":"q"}}` + "\n" +
		`{"type":"message","id":"a-1","parentId":"u-1","timestamp":"2026-11-01T00:00:02.000Z","message":{"role":"assistant","content":[{"type":"text","text":"ok"}],"provider":"anthropic","model":"claude-sonnet-4-5","usage":{"input":1,"output":1,"cacheRead":0,"cacheWrite":0,"totalTokens":2},"stopReason":"stop"}}` + "\n"
	if err := os.WriteFile(filepath.Join(job, "session", "current.jsonl"), []byte(loop), 0o600); err != nil {
		t.Fatal(err)
	}
	promote := func(extra ...string) (int, string) {
		t.Helper()
		code, out, _ := runCLI(t, append([]string{"promote", "--sessions-dir", root, "--job-dir", job, "--pi-version", "0.58.3"}, extra...)...)
		return code, out
	}
	if code, out := promote("--require", "answered"); code != exitOK || !strings.Contains(out, `"promoted":false,"reason":"run-incomplete",`) || !strings.Contains(out, `"run":"unknown",`) {
		t.Fatalf("--require answered: exit %d %s; want exit 0, run-incomplete, run unknown", code, out)
	}
	if code, out := promote(); code != exitOK || !strings.Contains(out, `"promoted":true,"reason":"promoted",`) || !strings.Contains(out, `"gen":1,"run":"unknown",`) {
		t.Fatalf("promote: exit %d %s; want exit 0, gen 1 promoted, run unknown", code, out)
	}
}
