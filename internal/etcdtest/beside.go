package etcdtest

import (
	"flag"
	"runtime"
	"strconv"
	"testing"

	protocolfaults "sessdb/internal/faults"
)

// Beside runs t beside the other tests of its package that call it
// (t.Parallel). It is for a test that waits rather than computes (on a
// request timeout, gRPC's reconnect backoff, a lease, a member's
// election) and sets nothing process-wide: the fault hook, the fleet's
// durability seam, a package variable, the environment, or a count of the
// process's goroutines, descriptors or children. Run one at a time,
// fleet/etcdmeta's tests took 216 s and 25 s of CPU, fleet's 314 s and
// 100 s (its worker processes' included).
//
// Go runs such tests after the package's others have ended, Parallel at
// a time (see Main). While one runs, faults.Set and sharedfs.Use panic.
func Beside(t *testing.T) {
	t.Helper()
	t.Parallel()
	t.Cleanup(protocolfaults.Beside())
}

// Parallel is how many tests that call Beside run at once where go test
// is not given -parallel (whose default is GOMAXPROCS: 2 on a two-core
// machine). They wait, so more than the cores run at once; the bound
// keeps a -race binary's goroutines (a three-member cluster has some
// hundreds) well under the race detector's 8,128. Starved (the binary at
// nice 19 beside four busy loops), four of fleet/etcdmeta's failed four
// at once, and two of those one at a time too (-parallel 1), until
// their setup had 10 s.
const Parallel = 4

// parallelGiven is whether the command line gave -test.parallel, as
// parallelByDefault found it (after it, the flag reads as set either way).
var parallelGiven bool

// parallelByDefault sets -test.parallel to Parallel, or to GOMAXPROCS
// where that is more, unless the command line gave it.
func parallelByDefault() {
	if !flag.Parsed() {
		flag.Parse()
	}
	flag.Visit(func(f *flag.Flag) { parallelGiven = parallelGiven || f.Name == "test.parallel" })
	if !parallelGiven {
		flag.Set("test.parallel", strconv.Itoa(max(Parallel, runtime.GOMAXPROCS(0))))
	}
}
