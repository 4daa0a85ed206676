package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sessdb/internal/sample"
)

// reap --dry-run --at judges a stray temp by its age at that time, at any
// time: judged at 01:00 on the first day of year 1, an hour after the
// zero time, a temp written just now is no hour old and is not listed.
// Before, that time made the stale-temp cutoff the zero time, which the
// temp listing took for "any age": the dry run said it would remove a
// temp written a moment ago (a real reap at that time, which only a Go
// caller's clock can make, swept it), where a nanosecond later it listed
// none.
func TestADryRunAtTheFirstHourOfYearOneListsNoYoungTemp(t *testing.T) {
	atSampleTime(t)
	root := copySample(t)
	temp := filepath.Join(root, sample.Resumable, ".current.jsonl.tmp-0123456789abcdef")
	if err := os.WriteFile(temp, []byte("a promotion's temp, written now"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, at := range []string{"0001-01-01T01:00:00Z", "0001-01-01T01:00:00.000000001Z", "2026-11-29T10:00:00Z"} {
		code, out, errs := runCLI(t, "reap", "--dry-run", "--json", "--at", at, root)
		if code != exitOK || strings.Contains(out, `"remove-temp"`) || !strings.Contains(out, `"swept":0`) {
			t.Errorf("reap --dry-run --at %s: exit %d, %s%s; want exit 0 and no temp to remove (it is seconds old)", at, code, out, errs)
		}
	}
	if _, err := os.Stat(temp); err != nil {
		t.Fatalf("the temp after the dry runs: %v", err)
	}
}
