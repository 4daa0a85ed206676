package main

import (
	"strings"
	"testing"
)

// --wide shapes dump's table, which --json replaces: given together, one
// was asked for in vain, and dump took --json without a word. The pair
// is a usage error naming both, as stats's --json and --prometheus are;
// each alone, and --wide with --history (a table), still runs.
func TestDumpRefusesJSONWithWide(t *testing.T) {
	clearEnv(t)
	root := copySample(t)
	for _, args := range [][]string{
		{"dump", "--json", "--wide", root},
		{"dump", "--wide", "--history", "3", "--json", root},
		{"dump", "--json=true", "--wide=true", root},
	} {
		code, out, errs := runCLI(t, args...)
		if code != exitUsage || out != "" || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, "--json and --wide") {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit 2, one line naming --json and --wide", args, code, brief(out), errs)
		}
	}
	for _, args := range [][]string{
		{"dump", "--json", root},
		{"dump", "--wide", root},
		{"dump", "--wide", "--history", "3", root},
		{"dump", "--json", "--wide=false", root},
	} {
		if code, out, errs := runCLI(t, args...); code != exitOK || out == "" {
			t.Errorf("%q: exit %d, stderr %q; want exit 0 and output", args, code, errs)
		}
	}
}
