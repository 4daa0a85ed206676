package store

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"sessdb/db"
	"sessdb/gates"
)

// plainBackend is a Backend without ContextBackend: its View and Begin
// wait for a key's lock until the LockTimeout whatever the caller's ctx.
type plainBackend struct{ Backend }

// On a Backend without ContextBackend, a resolve or a promote whose ctx
// ended while View or Begin waited for a locked key is the caller's
// cancel, never the locked verdict: not a cold start judged locked with a
// ticket, not errors.Is ErrKeyLocked, not promote's locked refusal.
func TestCancelOnABackendWithoutContext(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "first")
	sess, dir, data := contractJob(t, s, testKey, "job")
	stage(t, dir, answeredTurn(data, "1", 1000))
	s.backend = plainBackend{s.backend}
	s.opts.LockTimeout = 300 * time.Millisecond

	kd, err := os.Open(filepath.Join(root, testKey))
	if err != nil {
		t.Fatal(err)
	}
	defer kd.Close()
	w, _, err := db.OpenSidecars(kd, db.Options{}, true) // the key held, as by another promote
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()

	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	res, err := s.PromoteContext(ctx, sess, PromoteRequest{PiVersion: testPi})
	if !errors.Is(err, context.Canceled) || errors.Is(err, ErrKeyLocked) || res.Promoted || res.Reason != gates.PromoteFailed {
		t.Fatalf("a promote cancelled while Begin waited = %+v, %v; want promote-failed with context.Canceled alone", res, err)
	}

	jobDir := t.TempDir()
	ctx, cancel = context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	got, err := s.ResolveContext(ctx, testKey, localJob(), jobDir)
	if !errors.Is(err, context.Canceled) || errors.Is(err, ErrKeyLocked) {
		t.Fatalf("a resolve cancelled while View waited = %+v, %v; want context.Canceled, not a verdict", got, err)
	}
	if _, err := os.Lstat(filepath.Join(jobDir, TicketName)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a resolve cancelled while View waited left a ticket: %v", err)
	}
	w.Close()
	if res, err := s.Promote(sess, PromoteRequest{PiVersion: testPi}); err != nil || !res.Promoted || res.Gen != 2 {
		t.Fatalf("the retry = %+v, %v; want promoted gen 2", res, err)
	}
}
