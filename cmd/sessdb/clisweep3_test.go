package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
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

// A name under a root that is not UTF-8, and holds nothing else a
// terminal would act on, is escaped in a table as any other: \xNN for
// each byte that is no character, so that the table is text and the name
// can be told from another whose bytes differ.
func TestANameThatIsNotUTF8AloneIsEscaped(t *testing.T) {
	clearEnv(t)
	root := copySample(t)
	if err := os.Mkdir(filepath.Join(root, "bad\xffname"), 0o700); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runCLI(t, "dump", "--wide", root)
	if code != exitOK || !utf8.ValidString(out) || !strings.Contains(out, `bad\xffname`) {
		t.Errorf("dump --wide: exit %d, stderr %q, stdout UTF-8 %v; want the name shown as bad\\xffname:\n%s", code, errs, utf8.ValidString(out), out)
	}
}

// A root owned by root is walked by any user (docs: a root owned by
// another user is refused "unless ... the owner is root"): a system
// directory an operator made for the workers.
func TestARootOwnedByRootIsWalkedByAnyUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to make a directory root owns")
	}
	clearEnv(t)
	root := t.TempDir()
	prev := geteuid
	defer func() { geteuid = prev }()
	geteuid = func() int { return 4242 }
	for _, args := range [][]string{{"dump"}, {"check"}, {"reap", "--dry-run"}} {
		code, out, errs := runCLI(t, append(args, root)...)
		if code != exitOK || errs != "" {
			t.Errorf("%q on a root uid 0 owns, run as uid 4242: exit %d, stdout %q, stderr %q; want exit 0", args, code, brief(out), errs)
		}
	}
}
