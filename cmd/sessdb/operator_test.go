package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// An empty positional argument is a variable that was not set
// (`sessdb reap "$OLD_ROOT"`), never a request for the configured root:
// taken as absent, the walk went to PI_SESSIONS_DIR, another root than
// the one the operator meant, and reap removed its expired keys. Every
// command that takes a DIR or FILE refuses it, exit 2, naming the
// argument, and touches nothing.
func TestAnEmptyArgumentIsAUsageError(t *testing.T) {
	clearEnv(t)
	root := copySample(t)
	t.Setenv("PI_SESSIONS_DIR", root)
	before, _ := os.ReadDir(root)
	for _, args := range [][]string{
		{"reap", ""},
		{"reap", "--json", ""},
		{"dump", ""},
		{"check", "--repair", ""},
		{"stats", ""},
		{"migrate", "--dry-run", ""},
		{"engage", "replay", ""},
	} {
		code, out, errs := runCLI(t, append(args, "--log-format", "console")...)
		if code != exitUsage || out != "" || !strings.Contains(errs, "is empty") {
			t.Errorf("sessdb %s: exit %d, stdout %q, stderr %q; want exit 2, nothing on stdout, the argument named empty", strings.Join(args, " "), code, brief(out), errs)
		}
	}
	after, _ := os.ReadDir(root)
	if len(after) != len(before) {
		t.Errorf("the configured root had %d names, has %d: a command given an empty DIR acted on it", len(before), len(after))
	}
	if _, err := os.Stat(filepath.Join(root, "55c5b4543d2fe748d576d4ed795b9167")); err != nil {
		t.Errorf("the sample's expired key is gone: %v", err)
	}
}

// The command list is where an operator looks first: a command that runs
// on a fleet (it takes --etcd-endpoints) and whose one-liner names the
// sessions root it works on names the fleet too, or the list reads as if
// dump and check knew only a sessions root.
func TestOneLinersNameTheFleetWhereTheCommandRunsOnOne(t *testing.T) {
	for _, c := range commands {
		fs := c.newFlags()
		c.bind(fs)
		if fs.Lookup("etcd-endpoints") == nil || !strings.Contains(c.short, "sessions root") {
			continue
		}
		if !strings.Contains(c.short, "fleet") {
			t.Errorf("sessdb %s: its one-liner %q names a sessions root and not the fleet it also runs on", c.name, c.short)
		}
	}
}

// A flag error names the flag as help, the usage line and docs/cli.md
// spell it, with two dashes: the flag package writes "-bogus" for the
// "--bogus" an operator typed, beside sessdb's own "--history: ...".
func TestFlagErrorsNameTheFlagWithTwoDashes(t *testing.T) {
	clearEnv(t)
	for _, c := range []struct {
		args []string
		flag string
	}{
		{[]string{"dump", "--bogus"}, "--bogus"},
		{[]string{"dump", "--log-format", "console", "--key"}, "--key"},
		{[]string{"dump", "--json=maybe"}, "--json"},
		{[]string{"check", "--deep-check-timeout", "soon"}, "--deep-check-timeout"},
		{[]string{"engage", "replay", "--window", "wide", "f"}, "--window"},
	} {
		args := c.args
		if !slices.Contains(args, "--log-format") {
			args = append(args, "--log-format", "console")
		}
		code, _, errs := runCLI(t, args...)
		if code != exitUsage || !strings.Contains(errs, " "+c.flag) {
			t.Errorf("%v: exit %d, %q; want exit 2 naming %s", c.args, code, errs, c.flag)
		}
	}
}
