package quietexit

import (
	"os"
	"syscall"
	"testing"
)

// Exit ends a test binary with code, m.Run's, as os.Exit does, but a
// race build that passed exits at once. os.Exit(0) has the race detector
// sleep atexit_sleep_ms (1 s by default) first, so that a race another
// goroutine is still reporting is reported; GORACE set by Children
// spares the children that, not the binary itself, which read GORACE at
// its start, and every -race run of a package whose TestMain ends so
// waited that second after its last test (strace: one nanosleep of 1 s,
// the test binary's own, in store's whole run). A test binary's race
// reports are counted by its tests (testing fails a test, or the run,
// for one seen during it or outside any), so once m.Run has passed the
// sleep has none left to wait for. A failed run exits as os.Exit has it
// (the race detector does not sleep then), and so does one that writes
// coverage, whose counters are written at os.Exit.
func Exit(code int) {
	if code == 0 && raceBuilt && testing.CoverMode() == "" {
		syscall.Exit(0)
	}
	os.Exit(code)
}
