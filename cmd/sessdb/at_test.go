package main

import (
	"strings"
	"testing"
	"time"

	"sessdb/internal/sample"
)

// dump --at judges as if it were then: the shipped sample shows the same
// table, years later, as it did an hour after its clock (issue 12: a
// sample that never goes stale).
func TestDumpAtIsIndependentOfNow(t *testing.T) {
	clearEnv(t)
	root := copySample(t)
	at := sample.Time.Add(time.Hour)
	prev := clock
	t.Cleanup(func() { clock = prev })

	clock = func() time.Time { return at }
	_, then, _ := runCLI(t, "dump", root)
	for _, later := range []time.Time{at.AddDate(0, 1, 0), at.AddDate(3, 0, 0)} {
		clock = func() time.Time { return later }
		code, out, errs := runCLI(t, "dump", "--at", at.Format(time.RFC3339), root)
		if code != exitOK || out != then {
			t.Fatalf("dump --at %s on %s: exit %d %s\n%s\nwant\n%s", at.Format(time.RFC3339), later.Format(time.RFC3339), code, errs, out, then)
		}
		// Without --at, the same root reads differently then: the test
		// would prove nothing if it did not.
		if _, out, _ := runCLI(t, "dump", root); out == then {
			t.Fatalf("dump on %s without --at reads the same as an hour after the sample's clock", later)
		}
	}
	for _, bad := range []string{"yesterday", "2026-11-29", "2026-11-29 10:00:00"} {
		if code, _, errs := runCLI(t, "dump", "--at", bad, root); code != exitUsage || !strings.Contains(errs, "--at") {
			t.Errorf("--at %q: exit %d %s", bad, code, errs)
		}
	}
	clock = func() time.Time { return at.AddDate(1, 0, 0) }
	code, out, _ := runCLI(t, "stats", "--json", "--at", at.Format(time.RFC3339), root)
	if code != exitOK || !strings.Contains(out, `"promoted":6`) {
		t.Errorf("stats --at: exit %d\n%s", code, out)
	}
}
