// Package quietexit keeps the children of a race-built test binary from
// sleeping at their exit.
//
// A binary built with -race sleeps atexit_sleep_ms (1,000 by default) as
// it exits, whenever a goroutine besides the one exiting is alive, which
// in a Go program is almost always. The tests of cmd/sessdb, store and
// migrate re-execute their own binary as children (a CLI run, a
// promotion, a reap or a repair killed at a fault point, a load or chaos
// worker), and every child that exits on its own paid that second while
// its test waited for it; most helpers that start one set GORACE, and
// some did not. Set once in TestMain, before any test runs, the setting
// reaches every child that inherits the environment, those a helper
// starts and those the code under test starts, and their children.
package quietexit

import (
	"os"
	"strings"
)

// Children adds atexit_sleep_ms=0 to GORACE in this process's
// environment, keeping whatever else GORACE holds, unless GORACE sets
// atexit_sleep_ms already (a run that asks for the sleep keeps it). The
// process itself read GORACE at its start: only its children see the
// change.
func Children() {
	os.Setenv("GORACE", With(os.Getenv("GORACE")))
}

// With returns the GORACE value v with atexit_sleep_ms=0 added, or v
// unchanged if it sets atexit_sleep_ms.
func With(v string) string {
	for _, f := range strings.Fields(v) {
		if strings.HasPrefix(f, "atexit_sleep_ms=") {
			return v
		}
	}
	return strings.TrimSpace(strings.TrimSpace(v) + " atexit_sleep_ms=0")
}
