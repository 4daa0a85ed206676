package quietexit

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"
)

// TestMain ends as those of cmd/sessdb, store and migrate do.
func TestMain(m *testing.M) {
	Exit(m.Run())
}

// A race-built test binary whose tests passed exits at once, whatever
// atexit_sleep_ms its GORACE set: the child (this binary, running no
// test) asks for ten minutes, and os.Exit slept them all.
func TestExitDoesNotSleepAfterAPassingRun(t *testing.T) {
	if !raceBuilt {
		t.Skip("only a -race build sleeps at its exit")
	}
	c, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(c, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "GORACE=atexit_sleep_ms=600000")
	out, err := cmd.CombinedOutput()
	if c.Err() != nil {
		t.Fatalf("the child that passed had not exited a minute on (asked to sleep ten): %s", out)
	}
	if err != nil {
		t.Fatalf("the child: %v: %s", err, out)
	}
}
