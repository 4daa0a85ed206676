package main

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"testing"
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
