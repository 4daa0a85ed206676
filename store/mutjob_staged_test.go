package store

import (
	"errors"
	"os"
	"syscall"
	"testing"

	"sessdb/gates"
)

// A job dir that cannot be opened for another cause than its absence (a
// link that loops, here) is a fault of the promote, not "absent": absent
// tells the worker there is nothing to promote, and it may discard the
// run, which is still there behind whatever made the open fail.
func TestAJobDirThatCannotBeOpenedIsAFaultNotAbsent(t *testing.T) {
	s, _, _ := newTestStore(t, gates.Bounds{})
	sess, jobDir := mustResolve(t, s, testKey, localJob())
	if err := os.RemoveAll(jobDir); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(jobDir, jobDir); err != nil {
		t.Fatal(err)
	}
	res, err := s.Promote(sess, PromoteRequest{PiVersion: testPi})
	if !errors.Is(err, syscall.ELOOP) || res.Reason != gates.PromoteFailed {
		t.Fatalf("promote = %+v, %v; want promote-failed with ELOOP", res, err)
	}
}
