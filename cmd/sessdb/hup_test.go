package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"sessdb/store"
)

// A closed terminal (SIGHUP) under an operator's long reap, migration or
// check --repair stops it as Ctrl-C does: nothing new is started, what is
// under way is done and reported, the summary is marked interrupted, and
// the exit status is 130. The walks caught only SIGINT and SIGTERM, so a
// SIGHUP killed them as a crash would: midway, nothing on stdout after the
// last streamed line, no summary.
func TestAClosedTerminalStopsAWalkAsCtrlCDoes(t *testing.T) {
	const n = 100
	old := time.Now().Add(-30 * 24 * time.Hour)
	for _, c := range []struct {
		name string
		args []string
		key  func(dir string) // lays out one key dir
	}{
		{"migrate", []string{"migrate", "--json", "--workers", "1"}, func(dir string) {}},
		{"reap", []string{"reap", "--json", "--ttl-days", "1"}, func(dir string) {
			p := filepath.Join(dir, "current.jsonl")
			os.Chtimes(p, old, old)
		}},
		{"check --repair", []string{"check", "--repair", "--json"}, func(dir string) {
			os.WriteFile(filepath.Join(dir, ".current.jsonl.tmp-0000000000000001"), []byte("debris\n"), 0o600)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := filepath.Join(t.TempDir(), "sessions")
			for i := range n {
				dir := filepath.Join(root, store.Key("github", "acme/hup", fmt.Sprint("pi/issue-", i)))
				os.MkdirAll(dir, 0o700)
				os.WriteFile(filepath.Join(dir, "current.jsonl"), []byte(header), 0o600)
				os.WriteFile(filepath.Join(dir, "pi-version"), []byte("0.58.3"), 0o600)
				c.key(dir)
			}
			cmd := exec.Command(os.Args[0], append(c.args, "--log-format", "console", root)...)
			cmd.Env = append(os.Environ(), cliChildEnv+"=1", cliProgressEnv+"=1", "PI_SESSIONS_DIR=")
			// A SIGHUP caught here is one the exec resets to its default
			// in the child, whatever the test was started with (nohup).
			caught := make(chan os.Signal, 1)
			signal.Notify(caught, syscall.SIGHUP)
			defer signal.Stop(caught)
			var out strings.Builder
			cmd.Stdout = &out
			stderr, _ := cmd.StderrPipe()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			// The first progress report says the walk, and so its signal
			// handling, has begun.
			r := bufio.NewReader(stderr)
			if _, err := r.ReadString('/'); err != nil {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("no progress: %v", err)
			}
			cmd.Process.Signal(syscall.SIGHUP)
			errs, _ := io.ReadAll(r)
			cmd.Wait()
			if ws := cmd.ProcessState.Sys().(syscall.WaitStatus); ws.Signaled() {
				t.Fatalf("%s killed by %v: want it stopped as by Ctrl-C (exit 130)\nstdout: %s\nstderr: %s", c.name, ws.Signal(), out.String(), errs)
			}
			lines := strings.Split(strings.TrimSpace(out.String()), "\n")
			var last struct {
				Summary struct {
					Interrupted bool
					Entries     int
				}
			}
			json.Unmarshal([]byte(lines[len(lines)-1]), &last)
			if code := cmd.ProcessState.ExitCode(); code != exitInterrupted || !last.Summary.Interrupted || last.Summary.Entries >= n ||
				!strings.Contains(string(errs), "interrupted after") {
				t.Fatalf("%s after SIGHUP: exit %d, last line %s; want 130 and a summary marked interrupted short of %d entries\nstderr: %s", c.name, code, lines[len(lines)-1], n, errs)
			}
		})
	}
}

// A walk started with SIGHUP ignored (nohup, or a shell's empty trap)
// keeps it ignored, as docs/operations.md says: a closed terminal does
// not stop a reap an operator put under nohup to outlive it. Notify on
// the ignored signal would have caught it, stopping the walk at 130.
func TestAWalkStartedUnderNohupIgnoresAClosedTerminal(t *testing.T) {
	const n = 40 // each migrated: the run is the test's time
	root := filepath.Join(t.TempDir(), "sessions")
	for i := range n {
		dir := filepath.Join(root, store.Key("github", "acme/nohup", fmt.Sprint("pi/issue-", i)))
		os.MkdirAll(dir, 0o700)
		os.WriteFile(filepath.Join(dir, "current.jsonl"), []byte(header), 0o600)
		os.WriteFile(filepath.Join(dir, "pi-version"), []byte("0.58.3"), 0o600)
	}
	cmd := exec.Command("/bin/sh", "-c", `trap '' HUP; exec "$0" "$@"`, os.Args[0], "migrate", "--json", "--workers", "1", "--log-format", "console", root)
	cmd.Env = append(os.Environ(), cliChildEnv+"=1", cliProgressEnv+"=1", "PI_SESSIONS_DIR=")
	var out strings.Builder
	cmd.Stdout = &out
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The first progress report is the walk's (the shell has exec'd it),
	// and says its signal handling has begun.
	r := bufio.NewReader(stderr)
	if _, err := r.ReadString('/'); err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("no progress: %v", err)
	}
	cmd.Process.Signal(syscall.SIGHUP)
	errs, _ := io.ReadAll(r)
	cmd.Wait()
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	var last struct {
		Summary struct {
			Interrupted bool
			Entries     int
		}
	}
	json.Unmarshal([]byte(lines[len(lines)-1]), &last)
	if code := cmd.ProcessState.ExitCode(); code != exitOK || last.Summary.Interrupted || last.Summary.Entries != n {
		t.Fatalf("migrate under nohup after SIGHUP: exit %d, last line %s; want 0 and all %d entries, not interrupted\nstderr: %s", code, lines[len(lines)-1], n, errs)
	}
}
