package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Under a file-size limit (RLIMIT_FSIZE) below the transcript, a warm
// resolve fails (exit 1, "file too large") and leaves no staged file and
// no ticket, and a promote is promote-failed, its run left in the job
// dir and no temp in the key: the key still holds its generation, and the
// same job promotes once the limit is gone. (The Go runtime ignores
// SIGXFSZ, so the write fails with EFBIG rather than killing the process.)
func TestAFileSizeLimitLosesNothing(t *testing.T) {
	clearEnv(t)
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash to set the limit with")
	}
	base := t.TempDir()
	root := filepath.Join(base, "sessions")
	limited := func(args ...string) (int, string, string) {
		t.Helper()
		// bash's ulimit -f counts KiB: 64 KiB, below the transcript.
		cmd := exec.Command("bash", append([]string{"-c", `ulimit -f 64 && exec "$0" "$@"`, os.Args[0]}, args...)...)
		cmd.Env = append(os.Environ(), cliChildEnv+"=1")
		var out, errs bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errs
		err := cmd.Run()
		if _, ok := err.(*exec.ExitError); err != nil && !ok {
			t.Fatal(err)
		}
		return cmd.ProcessState.ExitCode(), out.String(), errs.String()
	}
	job := func(name string) (dir, staged string) {
		dir = filepath.Join(base, name)
		if code, out, errs := runCLI(t, "resolve", "--sessions-dir", root, "--key", workerKey, "--job-dir", dir, "--pi-version", "0.58.3"); code != 0 {
			t.Fatalf("resolve %s: exit %d\n%s%s", name, code, out, errs)
		}
		return dir, filepath.Join(dir, "session", "current.jsonl")
	}
	grow := func(staged string) {
		t.Helper()
		data, err := os.ReadFile(staged)
		if err != nil {
			t.Fatal(err)
		}
		if len(data) == 0 {
			data = []byte(header)
		}
		for i := range 400 {
			data = fmt.Appendf(data, `{"type":"message","id":"m%d-%d","parentId":null,"timestamp":"2026-11-01T00:00:01.000Z","message":{"role":"user","content":"%s"}}`+"\n", len(data), i, strings.Repeat("x", 300))
		}
		if err := os.WriteFile(staged, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	dir, staged := job("job-1")
	grow(staged)
	if _, out, _ := runCLI(t, "promote", "--sessions-dir", root, "--job-dir", dir, "--pi-version", "0.58.3"); !strings.Contains(out, `"gen":1`) {
		t.Fatalf("first promote: %s", out)
	}

	limitedDir := filepath.Join(base, "job-2")
	code, out, errs := limited("resolve", "--sessions-dir", root, "--key", workerKey, "--job-dir", limitedDir, "--pi-version", "0.58.3")
	if code != exitFault || out != "" || !strings.Contains(errs, "file too large") {
		t.Fatalf("a warm resolve under the limit: exit %d, want %d and EFBIG\n%s%s", code, exitFault, out, errs)
	}
	for _, name := range []string{"session/current.jsonl", "session.ticket"} {
		if _, err := os.Lstat(filepath.Join(limitedDir, name)); !os.IsNotExist(err) {
			t.Errorf("the failed resolve left %s (%v)", name, err)
		}
	}

	dir, staged = job("job-3")
	grow(staged)
	code, out, errs = limited("promote", "--sessions-dir", root, "--job-dir", dir, "--pi-version", "0.58.3")
	if code != 0 || !strings.Contains(out, `"reason":"promote-failed"`) || !strings.Contains(errs, "file too large") {
		t.Fatalf("a promote under the limit: exit %d\n%s%s", code, out, errs)
	}
	names, err := os.ReadDir(filepath.Join(root, workerKey))
	if err != nil || len(names) != 2 {
		t.Errorf("the key dir after the failed promote: %v, %v; want meta.db and the transcript alone", names, err)
	}
	if _, out, _ := runCLI(t, "promote", "--sessions-dir", root, "--job-dir", dir, "--pi-version", "0.58.3"); !strings.Contains(out, `"promoted":true`) || !strings.Contains(out, `"gen":2`) {
		t.Fatalf("the same job without the limit: %s", out)
	}
}
