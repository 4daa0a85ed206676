// Package mainexit tests etcdtest.Main's exit status from outside it: a
// test binary ending with Main whose test failed must exit non-zero.
// Run in etcdtest's own binary, a Main that exits 0 whatever m.Run said
// would hide that test's own failure too; here the parent ends with
// os.Exit, and only the child, this binary run again, ends with Main.
package mainexit

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"sessdb/internal/etcdtest"
)

// asChild, set in a child's environment, has TestMain end with
// etcdtest.Main and TestHelperFailsOnPurpose fail.
const asChild = "ETCDTEST_MAINEXIT_CHILD"

// TestMain ends the child with etcdtest.Main, the parent with os.Exit,
// so that a Main that hid a failed run is seen by the parent's test, not
// hidden from go test in the parent's own run.
func TestMain(m *testing.M) {
	if os.Getenv(asChild) != "" {
		etcdtest.Main(m)
		return
	}
	os.Exit(m.Run())
}

// A run under etcdtest.Main in which a test failed ends with exit status
// 1, as go test's own ending has it: every fleet package's TestMain is
// Main, and an exit status that hid a failure (Main ends with
// quietexit.Exit, not os.Exit, since the fifty-first session) would pass
// every failed fleet test, in CI too.
func TestMainExitsNonZeroWhenATestFails(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), exe, "-test.run=^TestHelperFailsOnPurpose$", "-test.count=1")
	cmd.Env = append(os.Environ(), asChild+"=1")
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("a run under etcdtest.Main whose test failed: %v; want exit status 1\n%s", err, out)
	}
	if !strings.Contains(string(out), "failed on purpose") || !strings.Contains(string(out), "--- FAIL: TestHelperFailsOnPurpose") {
		t.Errorf("the child's output does not show the failure it exited for:\n%s", out)
	}
}

// A race-built run under etcdtest.Main whose tests passed exits at once,
// whatever atexit_sleep_ms its GORACE set: the child (this binary, running
// no test) asks for ten minutes, which os.Exit(0) sleeps. Main ends with
// quietexit.Exit so that fleet's and etcdmeta's -race runs do not sleep
// the race detector's second at their exit; quietexit's
// TestEveryPackageEndsItsTestsWithExit sees that a package's TestMain
// calls Main, and this, that Main still ends so (a Main gone back to
// os.Exit passed both that and the test above).
func TestMainDoesNotSleepAfterAPassingRun(t *testing.T) {
	if !raceBuilt {
		t.Skip("only a -race build sleeps at its exit")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	c, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(c, exe, "-test.run=^$", "-test.count=1")
	cmd.Env = append(os.Environ(), asChild+"=1", "GORACE=atexit_sleep_ms=600000")
	out, err := cmd.CombinedOutput()
	if c.Err() != nil {
		t.Fatalf("a passing run under etcdtest.Main had not exited a minute on (asked to sleep ten at os.Exit): %s", out)
	}
	if err != nil {
		t.Fatalf("the child: %v: %s", err, out)
	}
}

// TestHelperFailsOnPurpose fails in the child of
// TestMainExitsNonZeroWhenATestFails; in the parent it does nothing.
func TestHelperFailsOnPurpose(t *testing.T) {
	if os.Getenv(asChild) != "" {
		t.Error("failed on purpose")
	}
}
