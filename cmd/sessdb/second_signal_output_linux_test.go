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
	out, ws, errs := killWhileWriting(t, "dump", "--json", "--log-format", "json", root)
	if !ws.Signaled() || ws.Signal() != syscall.SIGTERM {
		t.Fatalf("dump: %v; want killed by the second SIGTERM\n%s", ws, errs)
	}
	lines := strings.Split(string(out), "\n")
	last := lines[len(lines)-1]
	if last == "" && len(lines) > 1 {
		last = lines[len(lines)-2]
	}
	if len(out) == 0 || strings.HasPrefix(last, `{"summary":`) {
		t.Fatalf("dump killed while writing: %d bytes, last line %.80q; want a stream cut before its summary", len(out), last)
	}

	docSays(t, "json.md", "A second signal kills the command at once ([cli.md](cli.md#conventions)), even as it writes its lines: its stdout then stops where it was, mid-line included, with no summary")
	docSays(t, "cli.md", "A second Ctrl-C kills the process at once, even as it writes what it holds: its stdout then stops wherever it was, mid-line included, with no summary line")
}

// killWhileWriting runs sessdb with args, its stdout a pipe nobody reads
// until the command has written some of its output (and, when that is
// more than a pipe holds, is blocked writing the rest), then sends
// SIGTERM every 20 ms until it ends. It returns what stdout got, how the
// command ended and its stderr.
func killWhileWriting(t *testing.T, args ...string) ([]byte, syscall.WaitStatus, string) {
	t.Helper()
	return signalWhileWriting(t, syscall.SIGTERM, args...)
}

// signalWhileWriting is killWhileWriting with sig in place of SIGTERM.
func signalWhileWriting(t *testing.T, sig syscall.Signal, args ...string) ([]byte, syscall.WaitStatus, string) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), cliChildEnv+"=1", "PI_SESSIONS_DIR=")
	var errs bytes.Buffer
	cmd.Stdout, cmd.Stderr = w, &errs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	written := func() bool {
		n, err := unix.IoctlGetInt(int(r.Fd()), unix.TIOCINQ) // FIONREAD
		return err == nil && n > 0
	}
	for deadline := time.Now().Add(30 * time.Second); !written(); time.Sleep(10 * time.Millisecond) {
		select {
		case <-done:
			t.Fatalf("%s ended before it wrote anything: %v\n%s", args[0], cmd.ProcessState, errs.String())
		default:
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			<-done
			t.Fatalf("%s wrote nothing in 30 s", args[0])
		}
	}
	time.Sleep(50 * time.Millisecond)
	deadline := time.After(20 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		cmd.Process.Signal(sig)
		select {
		case <-done:
			out, _ := io.ReadAll(r)
			return out, cmd.ProcessState.Sys().(syscall.WaitStatus), errs.String()
		case <-deadline:
			cmd.Process.Kill()
			<-done
			t.Fatalf("%s still running 20 s after the first %v", args[0], sig)
		case <-tick.C:
		}
	}
}

// engage replay takes no signal: one kills it at once (docs/cli.md), and
// its answer, unlike resolve's and promote's one short line, is a line a
// request, written once the replay is done. A signal while it writes them
// to a reader slow to read cut them mid-line, with no summary, where
// cli.md said nothing is on stdout unless the signal came after the
// answer was written, whole. Both pages now say it is cut.
func TestASignalCutsEngageReplaysLines(t *testing.T) {
	var b strings.Builder
	b.WriteString(header)
	parent := "null"
	for i := range 3000 {
		fmt.Fprintf(&b, `{"type":"message","id":"u%d","parentId":%s,"timestamp":"2026-11-01T00:00:00Z","message":{"role":"user","content":[{"type":"text","text":"q"}],"timestamp":1}}`+"\n", i, parent)
		fmt.Fprintf(&b, `{"type":"message","id":"a%d","parentId":"u%d","timestamp":"2026-11-01T00:00:00Z","message":{"role":"assistant","content":[{"type":"text","text":"ok"}],"api":"anthropic-messages","provider":"anthropic","model":"claude-sonnet-4-5","usage":{"input":12,"output":40,"cacheRead":4000,"cacheWrite":0,"totalTokens":4052},"stopReason":"stop","timestamp":1}}`+"\n", i, i)
		parent = fmt.Sprintf(`"a%d"`, i)
	}
	file := filepath.Join(t.TempDir(), "t.jsonl")
	if err := os.WriteFile(file, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	out, ws, errs := killWhileWriting(t, "engage", "replay", "--json", "--log-format", "json", file)
	if !ws.Signaled() || ws.Signal() != syscall.SIGTERM {
		t.Fatalf("engage replay: %v; want killed by SIGTERM\n%s", ws, errs)
	}
	if len(out) == 0 || bytes.Contains(out, []byte(`{"summary":`)) {
		t.Fatalf("engage replay killed while writing: %d bytes, summary %v; want lines cut before their summary", len(out), bytes.Contains(out, []byte(`{"summary":`)))
	}
	docSays(t, "json.md", "always false: a replay is not interrupted, it is killed (killed while it writes its lines, it leaves them cut where they were, with no summary")
	docSays(t, "cli.md", "engage replay's answer is many lines, written once the replay is done: a signal that comes while it writes them (a reader slow to read a long replay) cuts them where it finds them, mid-line included, with no summary line")
}

// A second SIGHUP (a terminal closed, then its session's hangup again)
// kills a walk as a second Ctrl-C or SIGTERM does, and its cut stream is
// told from a whole interrupted one by its status: Python's returncode
// is -1 (a shell's status 129). json.md gave the returncodes of the kill as
// -2 or -15 alone, so a worker that took those two for a kill read a
// stream a SIGHUP cut as a whole one of another kind.
func TestASecondSIGHUPCutsTheOutputItIsWriting(t *testing.T) {
	root := filepath.Join(t.TempDir(), "sessions")
	for i := range 300 {
		dir := filepath.Join(root, store.Key("github", "acme/cut", fmt.Sprint("pi/issue-", i)))
		os.MkdirAll(dir, 0o700)
		os.WriteFile(filepath.Join(dir, "current.jsonl"), []byte(header), 0o600)
		os.WriteFile(filepath.Join(dir, "pi-version"), []byte("0.58.3"), 0o600)
	}
	out, ws, errs := signalWhileWriting(t, syscall.SIGHUP, "dump", "--json", "--log-format", "json", root)
	if !ws.Signaled() || ws.Signal() != syscall.SIGHUP {
		t.Fatalf("dump: %v; want killed by the second SIGHUP\n%s", ws, errs)
	}
	if len(out) == 0 || bytes.Contains(out, []byte(`{"summary":`)) {
		t.Fatalf("dump killed while writing: %d bytes; want a stream cut before its summary", len(out))
	}
	docSays(t, "json.md", "(Python's returncode tells the two apart: -2, -15 or -1 for the kill by a second Ctrl-C, SIGTERM or SIGHUP)")
}
