package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"sessdb/store"
)

// fullWriter is a stdout on a full disk: every write fails.
type fullWriter struct{}

func (fullWriter) Write([]byte) (int, error) { return 0, syscall.ENOSPC }

// runFull runs sessdb with args and a stdout every write to fails.
func runFull(t *testing.T, args ...string) (int, string) {
	t.Helper()
	var errb bytes.Buffer
	code := run(args, fullWriter{}, &errb)
	return code, errb.String()
}

// A help text that cannot be written is a fault like any other output:
// exit 1 and one line on stderr, never exit 0 with nothing printed.
func TestHelpToAFullDiskIsAFault(t *testing.T) {
	clearEnv(t)
	cases := [][]string{{"help"}, {"-h"}, {"help", "help"}, {"help", "engage"}, {"engage", "-h"}}
	for _, c := range commands {
		words := strings.Fields(c.name)
		cases = append(cases, append([]string{"help"}, words...), append(words, "-h"), append(words, "--help"))
	}
	for _, args := range cases {
		code, errs := runFull(t, args...)
		if code != exitFault || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, "no space left on device") {
			t.Errorf("%q to a full disk: exit %d, stderr %q; want exit 1 and one line naming the write error", args, code, errs)
		}
	}
}

// version can fail to write its answer like any command (exit 1), and its
// help lists every status it returns.
func TestVersionToAFullDiskIsAFault(t *testing.T) {
	fixBuildInfo(t)
	for _, args := range [][]string{{"version"}, {"version", "--json"}, {"--version"}} {
		code, errs := runFull(t, args...)
		if code != exitFault || strings.Count(errs, "\n") != 1 {
			t.Errorf("%q to a full disk: exit %d, stderr %q; want exit 1 and one line", args, code, errs)
		}
		if !slices.Contains(cmdVersion.exits, code) {
			t.Errorf("%q exited %d, which its help does not list: %v", args, code, cmdVersion.exits)
		}
	}
	if _, help, _ := runCLI(t, "help", "version"); !strings.Contains(help, fmt.Sprintf("\n  %-4d", exitFault)) {
		t.Errorf("help version does not list exit %d:\n%s", exitFault, help)
	}
}

// A resolve whose answer cannot be written exits 1 with its ticket and
// staged file written (docs/cli.md says they may stay); a retried resolve
// replaces both, and the job's promote goes by the retry's ticket.
func TestResolveRetriedAfterAnUnwrittenAnswer(t *testing.T) {
	clearEnv(t)
	root := filepath.Join(t.TempDir(), "sessions")
	os.Mkdir(root, 0o700)
	job := t.TempDir()
	args := []string{"resolve", "--sessions-dir", root, "--key", strings.Repeat("d", 32), "--job-dir", job, "--pi-version", "0.58.3"}
	code, errs := runFull(t, args...)
	if code != exitFault || strings.Count(errs, "\n") != 1 {
		t.Fatalf("resolve to a full disk: exit %d, %q; want exit 1 and one line", code, errs)
	}
	first, err := store.ReadTicket(job)
	if err != nil {
		t.Fatalf("the unanswered resolve left no ticket: %v (the doc says it may stay; fix the doc if it no longer does)", err)
	}
	staged := filepath.Join(job, store.StagedDirName, store.TranscriptName)
	os.WriteFile(staged, []byte("stale"), 0o600)
	if code, _, errs := runCLI(t, args...); code != exitOK {
		t.Fatalf("retried resolve: exit %d, %s", code, errs)
	}
	retry, err := store.ReadTicket(job)
	if err != nil || retry.Ticket == "" || retry.Ticket == first.Ticket {
		t.Fatalf("the retry did not replace the ticket: %v, %q after %q", err, retry.Ticket, first.Ticket)
	}
	if fi, err := os.Stat(staged); err != nil || fi.Size() != 0 {
		t.Fatalf("the retry did not stage its cold start afresh: %v", err)
	}
	os.WriteFile(staged, []byte(header), 0o600)
	code, out, errs := runCLI(t, "promote", "--sessions-dir", root, "--job-dir", job, "--pi-version", "0.58.3")
	if code != exitOK || !strings.Contains(out, `"promoted":true`) {
		t.Fatalf("promote after the retry: exit %d, %s%s", code, out, errs)
	}
}
