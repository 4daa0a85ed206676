package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"sessdb/store"
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

// reap's summary counts every name under the root in entries, a
// reap-owned dir an interrupted reap left among them, and counts as keys
// only the names that are keys: a README and that dir are entries, not
// keys (docs/json.md, reap.summary).
func TestReapCountsEveryNameAsAnEntryAndOnlyKeysAsKeys(t *testing.T) {
	clearEnv(t)
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, ".reaped-9ddb56ddcfac930962d0f4d375d2fd07-0123456789abcdef"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "README.txt"), []byte("notes\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"reap", "--dry-run", "--json"}, {"reap", "--json"}} {
		code, out, errs := runCLI(t, append(args, root)...)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		var last struct {
			Summary struct{ Entries, Keys, Finished, Skipped int }
		}
		if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); code != exitOK || err != nil {
			t.Fatalf("%q: exit %d, stdout %q, stderr %q", args, code, out, errs)
		}
		if sum := last.Summary; sum.Entries != 2 || sum.Keys != 0 || sum.Finished != 1 || sum.Skipped != 1 {
			t.Errorf("%q: summary %+v; want 2 entries, 0 keys, 1 finished, 1 skipped", args, last.Summary)
		}
	}
}

// A fleet reap whose report cannot be written (a full disk) names on
// stderr every file it removed, the orphaned generation files a fleet's
// reap sweeps among them: they are gone for good, and stdout will never
// say so.
func TestAFleetReapWhoseReportFailsNamesTheOrphansItRemoved(t *testing.T) {
	f := startFleet(t)
	markDir(t)
	key := store.Key("github", "orphan-named", "a")
	p := filepath.Join(f.dir, key, "0000000000000001-0123456789abcdef.jsonl")
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(header), 0o600); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-3 * time.Hour)
	if err := os.Chtimes(p, old, old); err != nil {
		t.Fatal(err)
	}
	var errb bytes.Buffer
	code := run([]string{"reap", "--log-format", "console"}, fullWriter{}, &errb)
	errs := errb.String()
	if _, err := os.Lstat(p); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("reap left the orphan (%v): exit %d, stderr %q", err, code, errs)
	}
	want := "removed " + key + "/0000000000000001-0123456789abcdef.jsonl, but the report was not written on stdout"
	if code != exitFault || !strings.Contains(errs, "no space left") || !strings.Contains(errs, want) {
		t.Errorf("reap to a full disk: exit %d, stderr %q; want exit 1 and the line %q", code, errs, want)
	}
}
