package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"sessdb/gates"
)

// errTxn is a KeyTxn whose HoldsRecord fails with err, and, as
// errTxnCtx, whose HoldsRecordContext fails with ctx's error wrapped.
type errTxn struct {
	KeyTxn
	err error
}

func (t errTxn) HoldsRecord() (bool, error) { return true, t.err }

type errTxnCtx struct{ errTxn }

func (errTxnCtx) HoldsRecordContext(ctx context.Context) (bool, error) {
	return false, fmt.Errorf("read current.jsonl: %w", ctx.Err())
}

// Once ctx has ended, a HoldsRecord that failed otherwise is the cancel
// (its failure read once the caller had gone says nothing), and a
// ContextKeyTxn's error that is ctx's, wrapped, is returned as it is.
func TestHoldsRecordOnceCtxEndedIsTheCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if holds, err := holdsRecord(ctx, errTxn{err: errors.New("input/output error")}); holds || err != context.Canceled {
		t.Errorf("holdsRecord of a read that failed once ctx ended = %v, %v; want false, context.Canceled", holds, err)
	}
	if holds, err := holdsRecord(ctx, errTxnCtx{}); holds || err == nil || err.Error() != "read current.jsonl: context canceled" {
		t.Errorf("holdsRecord of a ContextKeyTxn stopped by ctx = %v, %v; want its own error, wrapping the cancel", holds, err)
	}
}

// lookCounter is a Context whose Err is context.Canceled from its at-th
// look on, and whose Done is never closed.
type lookCounter struct {
	context.Context
	at    int64
	looks atomic.Int64
}

func (c *lookCounter) Done() <-chan struct{} { return nil }
func (c *lookCounter) Err() error {
	if c.looks.Add(1) >= c.at {
		return context.Canceled
	}
	return nil
}

// The key-dir store's HoldsRecordContext looks at ctx while it reads,
// before each megabyte: a cancel its second look sees stops the read
// there, not only one seen after it.
func TestHoldsRecordContextLooksWhileItReads(t *testing.T) {
	s, _, _ := newTestStore(t, gates.Bounds{})
	sess, _ := runJob(t, s, testKey, localJob(), PromoteRequest{}, strings.Repeat("x", 1<<20))
	txn, err := s.backend.Begin(testKey, sess.Base)
	if err != nil {
		t.Fatal(err)
	}
	defer txn.Close()
	second := &lookCounter{Context: context.Background(), at: 2}
	if holds, err := txn.(ContextKeyTxn).HoldsRecordContext(second); holds || !errors.Is(err, context.Canceled) {
		t.Fatalf("HoldsRecordContext cancelled at its second look = %v, %v (%d looks); want false, context.Canceled", holds, err, second.looks.Load())
	}

	// A file read whole in one look, ctx done at the look after it: the
	// match read is thrown away with the cancel, never true beside it.
	small := Key("github", "acme/widget", "pi/issue-small")
	sess, _ = runJob(t, s, small, localJob(), PromoteRequest{}, "one")
	txn, err = s.backend.Begin(small, sess.Base)
	if err != nil {
		t.Fatal(err)
	}
	defer txn.Close()
	after := &lookCounter{Context: context.Background(), at: 2}
	if holds, err := txn.(ContextKeyTxn).HoldsRecordContext(after); holds || !errors.Is(err, context.Canceled) {
		t.Fatalf("HoldsRecordContext done after its read = %v, %v; want false, context.Canceled", holds, err)
	}
}
