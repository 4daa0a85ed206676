package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"sessdb/internal/faults"
)

// cliSignalAtEnv makes the re-executed CLI child send itself a signal at
// a fault point: "POINT=SIGNUM" (see TestMain).
const cliSignalAtEnv = "SESSDB_TEST_CLI_SIGNAL_AT"

// SIGQUIT (Ctrl-\) ends any command as Go ends a program on it, which is
// what cli.md's exit status table says: every goroutine's stack on
// stderr, after "SIGQUIT: quit", and exit status 2, the status a usage
// error has too, with nothing on stdout. A promote so ended is as a crash
// leaves it: the same promote run again makes the promotion, or, where it
// had committed, repeats it; a resolve run again stages afresh.
func TestSIGQUITDumpsTheStacksAndExits2(t *testing.T) {
	for _, c := range []struct {
		cmd   string
		point faults.Point
		again string // in the answer of the same command run again
		also  string // and this too, where not ""
	}{
		{"resolve", faults.ResolveAfterGates, `"resume":true,"reason":"resumed"`, ""},
		// Ended before its commit, the promotion is made by the run
		// again, not repeated ("promoted":true is a repeat's answer too).
		{"promote", faults.PromoteAfterTempSync, `"promoted":true,"reason":"promoted"`, `"repeat":false`},
		{"promote", faults.PromoteAfterCommit, `"repeat":true`, ""},
	} {
		t.Run(string(c.point), func(t *testing.T) {
			clearEnv(t)
			root := filepath.Join(t.TempDir(), "sessions")
			os.Mkdir(root, 0o700)
			// A key with a transcript, for the resolve to judge.
			first := filepath.Join(t.TempDir(), "job")
			if code, _, errs := runCLI(t, resolveArgs(root, first)...); code != exitOK {
				t.Fatalf("resolve: %s", errs)
			}
			os.WriteFile(filepath.Join(first, "session", "current.jsonl"), []byte(header+`{"type":"message","id":"m"}`+"\n"), 0o600)
			if code, _, errs := runCLI(t, "promote", "--sessions-dir", root, "--job-dir", first, "--pi-version", "0.58.3"); code != exitOK {
				t.Fatalf("promote: %s", errs)
			}
			job := filepath.Join(t.TempDir(), "job")
			args := resolveArgs(root, job)
			if c.cmd == "promote" {
				if code, _, errs := runCLI(t, args...); code != exitOK {
					t.Fatalf("resolve: %s", errs)
				}
				staged := filepath.Join(job, "session", "current.jsonl")
				b, _ := os.ReadFile(staged)
				os.WriteFile(staged, append(b, `{"type":"message","id":"n"}`+"\n"...), 0o600)
				args = []string{"promote", "--sessions-dir", root, "--job-dir", job, "--pi-version", "0.58.3"}
			}
			cmd := exec.Command(os.Args[0], args...)
			var env []string
			for _, e := range os.Environ() {
				if !strings.HasPrefix(e, "GOTRACEBACK=") {
					env = append(env, e)
				}
			}
			cmd.Env = append(env, cliChildEnv+"=1", fmt.Sprintf("%s=%s=%d", cliSignalAtEnv, c.point, syscall.SIGQUIT))
			var out, errs bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errs
			cmd.Run()
			ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
			if ws.Signaled() || ws.ExitStatus() != exitUsage || out.Len() != 0 ||
				!strings.HasPrefix(errs.String(), "SIGQUIT: quit") || !strings.Contains(errs.String(), "goroutine ") {
				t.Fatalf("%s at %s: %v, stdout %q, stderr %.300q; want exit 2, nothing on stdout, Go's dump on stderr", c.cmd, c.point, cmd.ProcessState, out.String(), errs.String())
			}
			code, answer, aerrs := runCLI(t, args...)
			if code != exitOK || !json.Valid([]byte(answer)) || !strings.Contains(answer, c.again) || !strings.Contains(answer, c.also) {
				t.Fatalf("%s again: exit %d, %s %s; want %s %s", c.cmd, code, answer, aerrs, c.again, c.also)
			}
		})
	}
}
