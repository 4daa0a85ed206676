// FreeBSD's syscall.Rlimit holds int64s where Linux's and macOS's hold
// uint64s; the promise is the same there, and tested on these two.

//go:build !freebsd

package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"sessdb/gates"
	"sessdb/internal/testfs"
)

// A staged dir that cannot be opened for a reason other than its absence
// (here: no descriptor left, EMFILE; as well a permission or an I/O
// error) is a fault, promote-failed with its cause, so that the worker
// knows the run's transcript was not looked at. It was absent, with no
// error: "nothing to promote", and a worker that then discards the job
// dir lost the run.
func TestStagedDirThatCannotBeOpenedIsAFault(t *testing.T) {
	s, _, _ := newTestStore(t, gates.Bounds{})
	// The staged dir's own open must be the error: the job dir's open
	// takes the one descriptor left.
	stagedStarved := func(res PromoteResult, err error) bool {
		var pe *os.PathError
		return errors.Is(err, syscall.EMFILE) && res.Reason == gates.PromoteFailed && errors.As(err, &pe) && filepath.Base(pe.Path) == StagedDirName
	}
	var sess Session
	var res PromoteResult
	var err error
	for try := 1; ; try++ {
		// A job of its own each try: a promotion a freed descriptor let
		// through cannot be run again (it would be a repeat).
		var dir string
		var data []byte
		sess, dir, data = contractJob(t, s, testKey, fmt.Sprintf("fds-%d", try))
		stage(t, dir, answeredTurn(data, "F", 10))
		restore := testfs.LowerFDLimit(t, 1)
		res, err = s.Promote(sess, PromoteRequest{PiVersion: testPi})
		if held := restore(); stagedStarved(res, err) || held || try == 5 {
			break
		}
		t.Logf("try %d: %+v, %v, and a descriptor below the limit was freed meanwhile; a new job's promotion runs", try, res, err)
	}
	if !stagedStarved(res, err) {
		t.Fatalf("promote with no descriptor for the staged dir = %+v, %v; want promote-failed, the staged dir's EMFILE", res, err)
	}
	if again := mustPromote(t, s, sess, PromoteRequest{PiVersion: testPi}); !again.Promoted {
		t.Fatalf("the retry = %+v", again)
	}
}
