package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// A key dump could not read (an open failing for want of a descriptor,
// an I/O error) is a fault, exit 1: its entry has the error as its
// `problem` and a null `verdict`. docs/json.md said the verdict is null
// only for a name that is not a key, so a worker reading verdict.reason
// of every key met a null it was told a key never has. The limit on
// descriptors (prlimit, in a child) is lowered step by step until the
// key's opens fail but the root's does not.
func TestDumpVerdictIsNullForAKeyItCouldNotRead(t *testing.T) {
	prlimit, err := exec.LookPath("prlimit")
	if err != nil {
		t.Skip("no prlimit to limit a child's descriptors")
	}
	clearEnv(t)
	root := filepath.Join(t.TempDir(), "sessions")
	key := strings.Repeat("a7", 16)
	t.Setenv("PI_SESSIONS_DIR", root)
	job := filepath.Join(t.TempDir(), "job")
	if code, _, errs := runCLI(t, "resolve", "--key", key, "--job-dir", job, "--pi-version", "1"); code != exitOK {
		t.Fatalf("resolve: %s", errs)
	}
	os.WriteFile(filepath.Join(job, "session", "current.jsonl"), []byte(header), 0o600)
	if code, out, errs := runCLI(t, "promote", "--job-dir", job, "--pi-version", "1"); code != exitOK || !strings.Contains(out, `"promoted":true`) {
		t.Fatalf("promote: %d %s %s", code, out, errs)
	}
	faults := 0
	for n := 40; n >= 4; n-- {
		cmd := exec.Command(prlimit, fmt.Sprintf("--nofile=%d", n), "--", os.Args[0], "dump", "--json", "--key", key, "--log-format", "json")
		cmd.Env = append(os.Environ(), cliChildEnv+"=1")
		var out, errs strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errs
		cmd.Run()
		code := cmd.ProcessState.ExitCode()
		if ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus); ws.Signaled() || out.Len() == 0 {
			continue // too few to start, or to open the root: nothing of the key
		}
		var e struct {
			Key     string
			Problem *string
			Verdict *struct{ Reason string }
		}
		if err := json.Unmarshal([]byte(strings.SplitN(out.String(), "\n", 2)[0]), &e); err != nil || e.Key != key {
			t.Fatalf("--nofile=%d: first line %q: %v", n, out.String(), err)
		}
		switch {
		case e.Verdict != nil && code == exitOK:
		case e.Verdict == nil && code == exitFault && e.Problem != nil && strings.Contains(*e.Problem, "too many open files"):
			faults++
		default:
			t.Errorf("--nofile=%d: exit %d, problem %v, verdict %+v; want a verdict and exit 0, or null, an error and exit 1\n%s", n, code, e.Problem, e.Verdict, errs.String())
		}
	}
	if faults == 0 {
		t.Fatal("no limit made the key's opens fail and not the root's")
	}
	docSays(t, "json.md", "null for a name that is not a key, and for a key dump could not read (its `problem` an error: an I/O error, no descriptor left; a fault, exit 1, named on stderr)")
}
