package etcdtest

import (
	"flag"
	"runtime"
	"strconv"
	"testing"
)

// Main has the tests that call Beside run Parallel at once (or
// GOMAXPROCS, where that is more) when go test is not given -parallel.
func TestMainRunsParallelAtOnceUnlessTold(t *testing.T) {
	if parallelGiven {
		t.Skip("-parallel was given on the command line: Main keeps it")
	}
	want := strconv.Itoa(max(Parallel, runtime.GOMAXPROCS(0)))
	if got := flag.Lookup("test.parallel").Value.String(); got != want {
		t.Errorf("-test.parallel = %s under Main; want %s", got, want)
	}
}
