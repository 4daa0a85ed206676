package main

import (
	"strings"
	"testing"
)

// A duration flag that does not parse says why, as --etcd-timeout and
// --grace do, instead of the flag package's bare "parse error": "7d" is
// the mistake docs/stats.md warns of (Go durations have no d unit), and
// the line must tell the operator what to write instead.
func TestDurationFlagsSayWhy(t *testing.T) {
	root := copySample(t)
	for _, args := range [][]string{
		{"stats", "--since", "7d", root},
		{"check", "--deep-check-timeout", "30", root},
		{"check", "--deep-check-timeout", "1 m", root},
	} {
		code, out, errs := runCLI(t, args...)
		if code != exitUsage || out != "" || strings.Count(errs, "\n") != 1 ||
			!strings.Contains(errs, args[1][2:]) || strings.Contains(errs, "parse error") || !strings.Contains(errs, "not a duration") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 2 and one line naming the flag and saying it is not a duration", args, code, out, errs)
		}
	}
	// One of Go's form beyond its range (about 292 years) is out of
	// range, not "not a duration": its form is right. Before, it was
	// told there is no d unit.
	for _, args := range [][]string{
		{"stats", "--since", "2562048h", root},
		{"check", "--deep-check-timeout", "99999999999999999999s", root},
		{"stats", "--since", "-2562048h", root},
	} {
		code, out, errs := runCLI(t, args...)
		if code != exitUsage || out != "" || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, args[1][2:]) || !strings.Contains(errs, "out of range") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 2 and one line naming the flag, out of range", args, code, out, errs)
		}
	}
	// What parses still runs.
	for _, args := range [][]string{
		{"stats", "--since", "168h", root},
		{"stats", "--since", "1.5h", root},
		{"check", "--deep-check-timeout", "1m30s", root},
	} {
		if code, _, errs := runCLI(t, args...); code != exitOK {
			t.Errorf("%v: exit %d, stderr %q", args, code, errs)
		}
	}
}
