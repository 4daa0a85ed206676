package etcdtest

import (
	"fmt"
	"os"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	"sessdb/internal/quietexit"
)

// Main runs the package's tests, then fails the run if goroutines started
// during it are still running a few seconds after the last test: a member,
// client or lock session that was not closed. Call it from TestMain.
// Where go test is not given -parallel, Parallel tests that call Beside
// run at once.
func Main(m *testing.M) {
	parallelByDefault()
	before := goroutineIDs()
	code := m.Run()
	if code == 0 {
		if leaked := waitLeaks(before, leakWait); len(leaked) > 0 {
			fmt.Fprintf(os.Stderr, "etcdtest: %d goroutines leaked by the tests:\n\n%s\n", len(leaked), strings.Join(leaked, "\n\n"))
			code = 1
		}
	}
	quietexit.Exit(code)
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
	out := map[string]string{}
	for i, g := range strings.Split(string(dump()), "\n\n") {
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

// dump is runtime.Stack of every goroutine, the caller's first.
func dump() []byte {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return buf[:n]
		}
		buf = make([]byte, 2*len(buf))
	}
}

// Snapshot is the goroutines alive at one moment (Goroutines), for
// StartedStillRunning.
type Snapshot struct {
	alive map[string]bool
}

// Goroutines takes a Snapshot of the goroutines alive now.
func Goroutines() Snapshot { return Snapshot{goroutineIDs()} }

// StartedStillRunning waits up to wait for every goroutine that the
// calling goroutine started since before (itself, or through goroutines
// it started that still run) to end, and returns the stacks of those
// still running then. A count of the process's goroutines cannot tell a
// leak from what the etcd members and clients under test start at their
// own pace (a lock's lease keep-alive stream set up in the background
// after the count: "59 goroutines 30 s on, 57 before", no leak); those
// descend from goroutines alive before, and a caller's leak descends from
// it. A creator that ended is of unknown descent (a connection's
// handshake gRPC ran, or a request's try), and its goroutines are not
// counted. The wait bounds a teardown (a lock cut short closes a watch
// and a keep-alive, which end some scheduler rounds later), not the
// promise, and costs nothing when nothing is left.
func StartedStillRunning(before Snapshot, wait time.Duration) []string {
	self := callerID()
	deadline := time.Now().Add(wait)
	for {
		now := map[string]string{}     // id: stack
		creator := map[string]string{} // id: its creator's id
		for _, g := range strings.Split(string(dump()), "\n\n") {
			f := strings.Fields(g)
			if len(f) < 2 || f[0] != "goroutine" {
				continue
			}
			now[f[1]] = g
			if i := strings.LastIndex(g, " in goroutine "); i >= 0 && strings.Contains(g, "\ncreated by ") {
				if c := strings.Fields(g[i+len(" in goroutine "):]); len(c) > 0 {
					creator[f[1]] = c[0]
				}
			}
		}
		verdict := map[string]bool{}
		var started func(id string) bool
		started = func(id string) bool {
			if before.alive[id] || id == self {
				return false
			}
			if v, ok := verdict[id]; ok {
				return v
			}
			verdict[id] = false // a cycle of ids is none of the caller's
			c := creator[id]
			_, creatorRuns := now[c]
			v := c == self || creatorRuns && started(c)
			verdict[id] = v
			return v
		}
		var stacks []string
		for id, g := range now {
			if started(id) {
				stacks = append(stacks, g)
			}
		}
		if len(stacks) == 0 || time.Now().After(deadline) {
			sort.Strings(stacks)
			return stacks
		}
		time.Sleep(time.Millisecond)
	}
}

// callerID is the calling goroutine's id.
func callerID() string {
	buf := make([]byte, 64)
	f := strings.Fields(string(buf[:runtime.Stack(buf, false)]))
	if len(f) < 2 {
		return ""
	}
	return f[1]
}
