package etcdtest

import (
	"fmt"
	"os"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"
)

// Main runs the package's tests, then fails the run if goroutines started
// during it are still running a few seconds after the last test: a member,
// client or lock session that was not closed. Call it from TestMain.
func Main(m *testing.M) {
	before := goroutineIDs()
	code := m.Run()
	if code == 0 {
		if leaked := waitLeaks(before, leakWait); len(leaked) > 0 {
			fmt.Fprintf(os.Stderr, "etcdtest: %d goroutines leaked by the tests:\n\n%s\n", len(leaked), strings.Join(leaked, "\n\n"))
			code = 1
		}
	}
	os.Exit(code)
}

// leakWait is how long goroutines get to finish after the last test: gRPC
// closes its transports asynchronously, in well under a second.
const leakWait = 10 * time.Second

// benign names goroutines that libraries start once per process and keep:
// they are not a test's to close.
var benign = []string{
	"testing.(*M).",
	"testing.tRunner",
	"os/signal.signal_recv",
}

func waitLeaks(before map[string]bool, wait time.Duration) []string {
	deadline := time.Now().Add(wait)
	for {
		var leaked []string
		for id, stack := range goroutines() {
			if !before[id] && !isBenign(stack) {
				leaked = append(leaked, stack)
			}
		}
		if len(leaked) == 0 || time.Now().After(deadline) {
			sort.Strings(leaked)
			return leaked
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func isBenign(stack string) bool {
	for _, b := range benign {
		if strings.Contains(stack, b) {
			return true
		}
	}
	return false
}

func goroutineIDs() map[string]bool {
	ids := map[string]bool{}
	for id := range goroutines() {
		ids[id] = true
	}
	return ids
}

// goroutines returns every goroutine's stack but the caller's, by id.
func goroutines() map[string]string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	out := map[string]string{}
	for i, g := range strings.Split(string(buf), "\n\n") {
		if i == 0 {
			continue // this goroutine
		}
		// "goroutine 17 [chan receive]:"
		f := strings.Fields(g)
		if len(f) >= 2 && f[0] == "goroutine" {
			out[f[1]] = g
		}
	}
	return out
}
