// FreeBSD's syscall.Rlimit holds int64s where Linux's and macOS's hold
// uint64s; the promise is the same there, and tested on these two.

//go:build !freebsd

package store

import (
	"errors"
	"os"
	"syscall"
	"testing"

	"sessdb/gates"
	"sessdb/internal/testfs"
)

// withOneMoreFD runs f with the process allowed exactly one more open
// descriptor (RLIMIT_NOFILE bounds the descriptor's number, and an open
// takes the lowest free one: the limit is set to the second-lowest free
// number, found by opening two), then restores the limit. It reports
// whether the starvation held: no descriptor below the lowest free one
// was freed meanwhile by something else (testfs.LowerFDLimit).
func withOneMoreFD(t *testing.T, f func()) (held bool) {
	t.Helper()
	var first, second *os.File
	var err error
	if first, err = os.Open(os.DevNull); err == nil {
		second, err = os.Open(os.DevNull)
	}
	if err != nil {
		t.Fatal(err)
	}
	lowest, limit := uint64(first.Fd()), uint64(second.Fd())
	first.Close()
	second.Close()
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
		t.Fatal(err)
	}
	low := old
	low.Cur = limit
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &low); err != nil {
		t.Skipf("setrlimit: %v", err)
	}
	defer func() {
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
			t.Fatal(err)
		}
	}()
	f()
	return !testfs.FreedBelow(lowest, limit-lowest)
}

// A staged dir that cannot be opened for a reason other than its absence
// (here: no descriptor left, EMFILE; as well a permission or an I/O
// error) is a fault, promote-failed with its cause, so that the worker
// knows the run's transcript was not looked at. It was absent, with no
// error: "nothing to promote", and a worker that then discards the job
// dir lost the run.
func TestStagedDirThatCannotBeOpenedIsAFault(t *testing.T) {
	s, _, _ := newTestStore(t, gates.Bounds{})
	sess, dir, data := contractJob(t, s, testKey, "fds")
	stage(t, dir, answeredTurn(data, "F", 10))
	var res PromoteResult
	var err error
	for try := 1; ; try++ {
		held := withOneMoreFD(t, func() { res, err = s.Promote(sess, PromoteRequest{PiVersion: testPi}) })
		if held || res.Promoted || try == 5 {
			break
		}
		t.Logf("try %d: a descriptor below the limit was freed meanwhile; the promotion runs again", try)
	}
	if !errors.Is(err, syscall.EMFILE) || res.Reason != gates.PromoteFailed {
		t.Fatalf("promote with no descriptor for the staged dir = %+v, %v; want promote-failed, EMFILE", res, err)
	}
	if again := mustPromote(t, s, sess, PromoteRequest{PiVersion: testPi}); !again.Promoted {
		t.Fatalf("the retry = %+v", again)
	}
}
