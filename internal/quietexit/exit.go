package quietexit

import (
	"os"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Exit ends a test binary with code, m.Run's, as os.Exit does, but a
// race build that passed with nothing left running exits at once.
// os.Exit(0) has the race detector sleep atexit_sleep_ms (1 s by default)
// first, so that a race a goroutine still running is about to make is
// reported (and the exit status made 66); GORACE set by Children spares
// the children that, not the binary itself, which read GORACE at its
// start, and every -race run of a package whose TestMain ends so waited
// that second after its last test (strace: one nanosleep of 1 s, the test
// binary's own, in store's whole run). The sleep is skipped only where it
// has nothing to wait for: no goroutine but main's is left, at once or
// within 100 ms (none can race), and no race has been reported since
// m.Run counted them (one a
// goroutine a test left made after that count, which os.Exit turns into
// exit status 66). A goroutine a test left behind, still running, keeps
// the sleep, as os.Exit has it. A failed run exits as os.Exit has it (the
// race detector does not sleep then), and so does one with coverage on:
// a test binary writes its counters inside m.Run, before Exit, so that
// is caution only (a -race -cover run of migrate's tests wrote the same
// profile either way, RELIABILITY §5bd).
func Exit(code int) {
	quiet := code == 0 && raceBuilt && testing.CoverMode() == "" && othersEnd() && raceErrors() == 0
	decided()
	if quiet {
		syscall.Exit(0)
	}
	os.Exit(code)
}

// othersEnd reports whether no goroutine but the caller's is left, given
// up to 100 ms to end: one a test's cleanup let go of may still be on its
// way out (store's whole run: two goroutines at Exit, one a moment later).
// os/signal's loop is not counted: the first signal.Notify of the process
// starts it and nothing ends it (signal.Stop and NotifyContext's stop do
// not), and it runs no test's code, only hands a signal that comes to
// the channels notified (cmd/sessdb's walks, run in its test binary).
func othersEnd() bool {
	for range 100 {
		if n := runtime.NumGoroutine(); n == 1 || n == 1+signalLoops() {
			return true
		}
		time.Sleep(time.Millisecond)
	}
	return false
}

// signalLoops is how many goroutines are os/signal's loop, waiting for a
// signal (0 or 1).
func signalLoops() int {
	buf := make([]byte, 64<<10)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	return strings.Count(string(buf), "\nos/signal.signal_recv()\n")
}

// decided is called once Exit has decided whether to sleep, before it
// exits: a test's leftover goroutine races from there.
var decided = func() {}
