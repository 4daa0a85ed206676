package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"sessdb/store"
)

// A second signal kills a walk at once (TestASecondSignalKillsAWalk), and
// so it does while the walk writes what it holds: a dump --json whose
// reader has not read yet is blocked in its write, and its stdout stops
// where the kill found it, mid-line, with no summary. docs/json.md said
// only that what was done before a signal is printed with its summary
// (exit 130), and cli.md that a second Ctrl-C kills: a worker taking a
// shell's 130 (which a second Ctrl-C's SIGINT also gives) for a whole
// interrupted stream read half of one. Both pages now say it, and that a
// stream is whole only when its last line is its summary.
func TestASecondSignalCutsTheOutputItIsWriting(t *testing.T) {
	root := filepath.Join(t.TempDir(), "sessions")
	// Enough keys that their lines overfill a pipe (64 KiB on Linux).
	for i := range 300 {
		dir := filepath.Join(root, store.Key("github", "acme/cut", fmt.Sprint("pi/issue-", i)))
		os.MkdirAll(dir, 0o700)
		os.WriteFile(filepath.Join(dir, "current.jsonl"), []byte(header), 0o600)
		os.WriteFile(filepath.Join(dir, "pi-version"), []byte("0.58.3"), 0o600)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	cmd := exec.Command(os.Args[0], "dump", "--json", "--log-format", "json", root)
	cmd.Env = append(os.Environ(), cliChildEnv+"=1", "PI_SESSIONS_DIR=", "GORACE=atexit_sleep_ms=0")
	var errs bytes.Buffer
	cmd.Stdout, cmd.Stderr = w, &errs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	// The walk has ended and its lines are being written once the pipe
	// holds any: dump writes nothing before. They are more than the pipe
	// takes, so dump is then blocked in a write until it is read.
	full := func() bool {
		n, err := unix.IoctlGetInt(int(r.Fd()), unix.TIOCINQ) // FIONREAD
		return err == nil && n > 0
	}
	for deadline := time.Now().Add(30 * time.Second); !full(); time.Sleep(10 * time.Millisecond) {
		select {
		case <-done:
			t.Fatalf("dump ended before its output filled the pipe: %v\n%s", cmd.ProcessState, errs.String())
		default:
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			<-done
			t.Fatal("dump's output never filled the pipe")
		}
	}
	time.Sleep(50 * time.Millisecond)
	// The first signal is taken as Ctrl-C is; the ones after it kill.
	deadline := time.After(20 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
signals:
	for {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
			break signals
		case <-deadline:
			cmd.Process.Kill()
			<-done
			t.Fatal("dump still running 20 s after the first SIGTERM")
		case <-tick.C:
		}
	}
	out, _ := io.ReadAll(r)
	ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if !ws.Signaled() || ws.Signal() != syscall.SIGTERM {
		t.Fatalf("dump: %v; want killed by the second SIGTERM\n%s", cmd.ProcessState, errs.String())
	}
	lines := strings.Split(string(out), "\n")
	last := lines[len(lines)-1]
	if last == "" && len(lines) > 1 {
		last = lines[len(lines)-2]
	}
	if len(out) == 0 || strings.HasPrefix(last, `{"summary":`) {
		t.Fatalf("dump killed while writing: %d bytes, last line %.80q; want a stream cut before its summary", len(out), last)
	}

	for _, page := range []struct{ name, says string }{
		{"json.md", "A second signal kills the command at once ([cli.md](cli.md#conventions)), even as it writes its lines: its stdout then stops where it was, mid-line included, with no summary"},
		{"cli.md", "A second Ctrl-C kills the process at once, even as it writes what it holds: its stdout then stops wherever it was, mid-line included, with no summary line"},
	} {
		b, err := os.ReadFile(filepath.Join("..", "..", "docs", page.name))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(strings.Join(strings.Fields(string(b)), " "), page.says) {
			t.Errorf("docs/%s does not say %q", page.name, page.says)
		}
	}
}
