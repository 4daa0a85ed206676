package store

import (
	"testing"

	"sessdb/gates"
)

// A nil ctx is context.Background(), as the doc says: ResolveContext and
// PromoteContext with one are Resolve and Promote.
func TestNilContextIsBackground(t *testing.T) {
	s, _, _ := newTestStore(t, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "first")
	jobDir := t.TempDir()
	//lint:ignore SA1012 a nil ctx is what is tested
	sess, err := s.ResolveContext(nil, testKey, localJob(), jobDir)
	if err != nil || !sess.Resume {
		t.Fatalf("ResolveContext(nil) = %+v, %v; want a resume", sess, err)
	}
	stage(t, jobDir, answeredTurn(staged(t, jobDir), "1", 1000))
	//lint:ignore SA1012 a nil ctx is what is tested
	res, err := s.PromoteContext(nil, sess, PromoteRequest{PiVersion: testPi})
	if err != nil || !res.Promoted || res.Gen != 2 {
		t.Fatalf("PromoteContext(nil) = %+v, %v; want promoted gen 2", res, err)
	}
}
