package store

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/rs/zerolog"

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

// A promote whose ctx is done before the call is promote-failed with the
// cancel even where the run would be refused before the key is read (no
// staged file: absent), as PromoteResult.Reason's doc says; and a promote
// given up in its wait is logged as a cancel, at info, not as a fault.
func TestPromoteDoneBeforeIsPromoteFailedAndLoggedAsACancel(t *testing.T) {
	s, _, _ := newTestStore(t, gates.Bounds{})
	log := &bytes.Buffer{}
	s.opts.Logger = zerolog.New(log)
	sess, dir, _ := contractJob(t, s, testKey, "job")
	if err := os.Remove(filepath.Join(dir, StagedDirName, TranscriptName)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err := s.PromoteContext(ctx, sess, PromoteRequest{PiVersion: testPi})
	if !errors.Is(err, context.Canceled) || res.Reason != gates.PromoteFailed {
		t.Fatalf("a promote of no run, ctx done before = %+v, %v; want promote-failed, context.Canceled", res, err)
	}
	// Given up in the read of the run: logged as the cancel.
	stage(t, dir, answeredTurn(transcriptBytes(s.opts.Now()), "1", 1000))
	cd := &countdown{Context: context.Background()}
	cd.n.Store(1)
	if _, err := s.PromoteContext(cd, sess, PromoteRequest{PiVersion: testPi}); !errors.Is(err, context.Canceled) {
		t.Fatalf("a promote given up in its read = %v, want context.Canceled", err)
	}
	if !bytes.Contains(log.Bytes(), []byte(`"session_promote_cancelled"`)) || bytes.Contains(log.Bytes(), []byte(`"session_store_failed"`)) {
		t.Fatalf("logged %s, want session_promote_cancelled and no session_store_failed", log.Bytes())
	}
}
