package main

import (
	"bytes"
	"strings"
	"testing"
)

// --log-format given last, its value left out, is a usage error like any
// flag's missing value: exit 2, one line naming the flag, before and after
// the command's name. Its format is looked for before the arguments are
// parsed, and that look must not read past the last argument (a panic, a
// Go trace on stderr and exit 2 for the wrong reason).
func TestALogFormatFlagGivenLastWithoutAValueIsAUsageError(t *testing.T) {
	clearEnv(t)
	for _, args := range [][]string{
		{"dump", "--log-format"},
		{"dump", t.TempDir(), "-log-format"},
		{"--log-format"},
	} {
		code, out, errs := runCLI(t, args...)
		if code != exitUsage || out != "" || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, "log-format") {
			t.Errorf("sessdb %q: exit %d, stdout %q, stderr %q; want exit 2 and one line naming --log-format", args, code, brief(out), errs)
		}
	}
}

// A walk's report that cannot be written (a full disk) is a fault, exit 1
// naming the write's error, however short the report: a dump's table or
// JSON lines and a migration's lines are held in a buffer until the walk
// ends, and the buffer's last write, not only the ones before it, must
// reach stdout for the command to exit 0.
func TestAShortWalkReportToAFullDiskIsAFault(t *testing.T) {
	for _, args := range [][]string{{"dump"}, {"dump", "--json"}, {"dump", "--history", "2"}, {"migrate", "--dry-run"}, {"migrate", "--dry-run", "--json"}} {
		clearEnv(t)
		var errb bytes.Buffer
		code := run(append(args, "--log-format", "console", copySample(t)), fullWriter{}, &errb)
		if errs := errb.String(); code != exitFault || !strings.Contains(errs, "no space left on device") {
			t.Errorf("%q to a full disk: exit %d, stderr %q; want exit 1 naming the write's error", args, code, errs)
		}
	}
}
