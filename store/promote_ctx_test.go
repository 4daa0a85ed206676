package store

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/rs/zerolog"

	"sessdb/gates"
	"sessdb/internal/faults"
)

// A commit that fails is a fault, even when the caller's context ended
// while it ran: the commit never consults ctx, so its failure is not the
// caller's cancel. It is promote-failed with the commit's own error (not
// context.Canceled), logged as session_store_failed for the operator, not
// as a cancel.
func TestACommitsFaultAfterACancelIsAFault(t *testing.T) {
	s, _, _ := newTestStore(t, gates.Bounds{})
	log := &bytes.Buffer{}
	s.opts.Logger = zerolog.New(log)
	sess, dir, data := contractJob(t, s, testKey, "job")
	stage(t, dir, answeredTurn(data, "1", 1000))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fault := errors.New("the commit's own fault")
	faults.Set(func(p faults.Point) error {
		if p == faults.PromoteAfterCommit {
			cancel()
			return fault
		}
		return nil
	})
	defer faults.Set(nil)
	res, err := s.PromoteContext(ctx, sess, PromoteRequest{PiVersion: testPi})
	if res.Reason != gates.PromoteFailed || !errors.Is(err, fault) || errors.Is(err, context.Canceled) {
		t.Fatalf("a commit that failed after the cancel = %+v, %v; want promote-failed with the commit's fault, not the cancel", res, err)
	}
	if !bytes.Contains(log.Bytes(), []byte(`"session_store_failed"`)) || bytes.Contains(log.Bytes(), []byte("cancelled")) {
		t.Fatalf("logged %s, want session_store_failed and no cancel", log.Bytes())
	}
}
