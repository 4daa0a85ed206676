package quietexit

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestMain ends as those of cmd/sessdb, store and migrate do in the
// children these tests run (asChild or lateRaceEnv in their
// environment); runEnded is closed between the two, for a test that
// leaves a goroutine behind. The parent exits by os.Exit, so that an
// Exit that hid a failed run (exit 0) is seen by the children's tests,
// not hidden from go test in the parent's own run.
func TestMain(m *testing.M) {
	code := m.Run()
	close(runEnded)
	switch os.Getenv(lateRaceEnv) {
	case "done":
		<-raced
		for runtime.NumGoroutine() > 1 {
			runtime.Gosched() // the racing goroutines' own ends
		}
	case "running":
		decided = func() { close(inExit) }
	}
	if os.Getenv(asChild) == "1" || os.Getenv(lateRaceEnv) != "" {
		Exit(code)
	}
	os.Exit(code)
}

// lateRaceEnv has the child run TestLeaveAGoroutineThatRacesLate's body:
// "running", its goroutine races once Exit has decided, before it exits;
// "done", as soon as m.Run is over, TestMain calling Exit once the race
// has been reported and its goroutines have ended.
const lateRaceEnv = "QUIETEXIT_TEST_LATE_RACE"

var (
	runEnded = make(chan struct{})
	inExit   = make(chan struct{})
	raced    = make(chan struct{})
	racy     int
)

// A test that passes leaving a goroutine behind, which races once m.Run
// is over: the race detector's sleep at os.Exit is there for it (the
// report, and exit status 66). Exit skipped that sleep for every passing
// run: the child exited 0, the race unreported (killed before it ran) or
// reported and still exit 0 (it ran before Exit). Exit now skips it only
// where no goroutine but main's is left and no race was reported since.
func TestLeaveAGoroutineThatRacesLate(t *testing.T) {
	if !raceBuilt {
		t.Skip("only a -race build reports races")
	}
	switch os.Getenv(lateRaceEnv) {
	case "running":
		go func() {
			<-inExit
			race()
		}()
		return
	case "done":
		go func() {
			<-runEnded
			race()
			close(raced)
		}()
		return
	}
	for _, when := range []string{"running", "done"} {
		c, cancel := context.WithTimeout(t.Context(), time.Minute)
		cmd := exec.CommandContext(c, os.Args[0], "-test.run=^TestLeaveAGoroutineThatRacesLate$")
		// Three seconds for the goroutine still running to race in; none
		// needed once it has raced.
		sleep := map[string]string{"running": "3000", "done": "0"}[when]
		cmd.Env = append(os.Environ(), lateRaceEnv+"="+when, "GORACE=atexit_sleep_ms="+sleep)
		out, err := cmd.CombinedOutput()
		cancel()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 66 || !strings.Contains(string(out), "DATA RACE") {
			t.Errorf("a passing run whose leftover goroutine races after m.Run (%s at Exit): %v; want exit status 66 and the race reported: %s", when, err, out)
		}
	}
}

// race writes racy from two goroutines, neither ordered before the other.
func race() {
	done := make(chan struct{})
	go func() { racy++; close(done) }()
	racy++
	<-done
}

// asChild marks the environment of a child these tests run.
const asChild = "QUIETEXIT_TEST_CHILD"

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
	cmd.Env = append(os.Environ(), asChild+"=1", "GORACE=atexit_sleep_ms=600000")
	out, err := cmd.CombinedOutput()
	if c.Err() != nil {
		t.Fatalf("the child that passed had not exited a minute on (asked to sleep ten): %s", out)
	}
	if err != nil {
		t.Fatalf("the child: %v: %s", err, out)
	}
}

// A test binary whose run failed exits 1, race-built or not: only a
// passing run skips os.Exit (mutnew50's N36, the code == 0 test dropped:
// a failed -race run exited 0, and go test took it for a pass).
func TestExitSaysAFailedRunFailed(t *testing.T) {
	if os.Getenv("QUIETEXIT_TEST_FAIL") == "1" {
		t.Fatal("failing, as the parent asked")
	}
	c, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(c, os.Args[0], "-test.run=^TestExitSaysAFailedRunFailed$")
	cmd.Env = append(os.Environ(), asChild+"=1", "QUIETEXIT_TEST_FAIL=1")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("the child whose test failed: %v; want exit status 1: %s", err, out)
	}
}

// signalEnv has the child run TestExitDoesNotSleepAfterASignalWasAwaited's
// body: a walk's wait for Ctrl-C, as cmd/sessdb's tests run its commands.
const signalEnv = "QUIETEXIT_TEST_SIGNAL"

// A passing run whose tests waited for a signal (cmd/sessdb's walks run
// in its test binary: signal.NotifyContext, then its stop) exits at once
// too. The first signal.Notify starts os/signal's loop, which nothing
// ends: counted as a goroutine left behind, it kept the race detector's
// sleep for every such run (the child asks for ten minutes).
func TestExitDoesNotSleepAfterASignalWasAwaited(t *testing.T) {
	if !raceBuilt {
		t.Skip("only a -race build sleeps at its exit")
	}
	if os.Getenv(signalEnv) != "" {
		_, stop := signal.NotifyContext(t.Context(), os.Interrupt)
		stop()
		return
	}
	c, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(c, os.Args[0], "-test.run=^TestExitDoesNotSleepAfterASignalWasAwaited$")
	cmd.Env = append(os.Environ(), asChild+"=1", signalEnv+"=1", "GORACE=atexit_sleep_ms=600000")
	out, err := cmd.CombinedOutput()
	if c.Err() != nil {
		t.Fatalf("the child that passed, having waited for a signal, had not exited 30 s on (asked to sleep ten minutes): %s", out)
	}
	if err != nil {
		t.Fatalf("the child: %v: %s", err, out)
	}
}
