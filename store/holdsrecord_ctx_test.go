package store

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"sessdb/gates"
	"sessdb/internal/faults"
)

// A ticket's retry of the promotion the key's record names reads the key's
// transcript (HoldsRecord). A caller that gives up while it reads is given
// up then: promote-failed with the caller's cancel, nothing written, the
// run in its job dir; the retry with a live context is the repeat. Before,
// the read took context.Background(): it read on to the file's end, and
// the promote returned the repeat's "promoted" with a nil error after its
// caller had cancelled.
func TestARetryGivenUpWhileHoldsRecordReadsIsTheCancel(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "before")
	sess, jobDir := mustResolve(t, s, testKey, localJob())
	run := append(staged(t, jobDir), entryLine(strings.Repeat("x", 8<<20))...)
	stage(t, jobDir, run)
	if res := mustPromote(t, s, sess, PromoteRequest{PiVersion: testPi}); !res.Promoted || res.Gen != 2 {
		t.Fatalf("promote = %+v; want gen 2", res)
	}
	sc, history := sidecarsOf(t, root, testKey), historyOf(t, root, testKey)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var cancelled time.Time
	faults.Set(func(p faults.Point) error {
		if p == faults.HoldsRecordRead && cancelled.IsZero() {
			cancelled = time.Now()
			cancel()
		}
		return nil
	})
	t.Cleanup(func() { faults.Set(nil) })
	res, err := s.PromoteContext(ctx, sess, PromoteRequest{PiVersion: testPi})
	took := time.Since(cancelled)
	faults.Set(nil)
	if cancelled.IsZero() {
		t.Fatal("the retry never asked HoldsRecord")
	}
	t.Logf("returned %v after the cancel, reading %d bytes", took, len(run))
	if !errors.Is(err, context.Canceled) || res.Promoted || res.Repeat || res.Reason != gates.PromoteFailed {
		t.Fatalf("a retry given up while HoldsRecord reads = %+v, %v; want promote-failed, context.Canceled", res, err)
	}
	if now := sidecarsOf(t, root, testKey); !reflect.DeepEqual(now, sc) {
		t.Errorf("the record changed: %+v, was %+v", now, sc)
	}
	if now := historyOf(t, root, testKey); !reflect.DeepEqual(now, history) {
		t.Errorf("the history changed: %d entries, was %d", len(now), len(history))
	}
	if !bytes.Equal(staged(t, jobDir), run) {
		t.Fatal("the run left its job dir")
	}
	if retry := mustPromote(t, s, sess, PromoteRequest{PiVersion: testPi}); !retry.Promoted || !retry.Repeat || retry.Gen != 2 {
		t.Fatalf("the retry with a live context = %+v; want a repeat of gen 2", retry)
	}
	if b, err := os.ReadFile(filepath.Join(root, testKey, TranscriptName)); err != nil || !bytes.Equal(b, run) {
		t.Fatalf("the key's transcript is not the run (%v)", err)
	}
}

// holdsTxn is a KeyTxn whose HoldsRecord answers true, and that records
// the context HoldsRecordContext was given where it has that method
// (withCtx).
type holdsTxn struct {
	KeyTxn
	got context.Context
}

func (t *holdsTxn) HoldsRecord() (bool, error) { return true, nil }

type holdsTxnCtx struct{ *holdsTxn }

func (t holdsTxnCtx) HoldsRecordContext(ctx context.Context) (bool, error) {
	t.got = ctx
	return true, nil
}

// holdsRecord gives a ContextKeyTxn the caller's context, and throws away
// the answer of one without it once ctx has ended.
func TestHoldsRecordTakesTheCallersContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	with := holdsTxnCtx{&holdsTxn{}}
	if holds, err := holdsRecord(ctx, with); !holds || err != nil || with.got != ctx {
		t.Fatalf("holdsRecord of a ContextKeyTxn = %v, %v, given %v; want true, the caller's ctx", holds, err, with.got)
	}
	cancel()
	for _, txn := range []KeyTxn{&holdsTxn{}, holdsTxnCtx{&holdsTxn{}}} {
		if holds, err := holdsRecord(ctx, txn); holds || !errors.Is(err, context.Canceled) {
			t.Fatalf("holdsRecord of %T once ctx ended = %v, %v; want false, context.Canceled", txn, holds, err)
		}
	}
}

// The key-dir store's KeyTxn takes the caller's context for HoldsRecord
// (ContextKeyTxn): a context already done reads nothing and says so, with
// its error, where HoldsRecord alone reads the file whole.
func TestHoldsRecordContextStopsItsRead(t *testing.T) {
	s, _, _ := newTestStore(t, gates.Bounds{})
	sess, _ := runJob(t, s, testKey, localJob(), PromoteRequest{}, "one")
	txn, err := s.backend.Begin(testKey, sess.Base)
	if err != nil {
		t.Fatal(err)
	}
	defer txn.Close()
	ct, ok := txn.(ContextKeyTxn)
	if !ok {
		t.Fatal("the key-dir store's KeyTxn is no ContextKeyTxn")
	}
	if holds, err := ct.HoldsRecordContext(context.Background()); !holds || err != nil {
		t.Fatalf("HoldsRecordContext with a live ctx = %v, %v; want true", holds, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if holds, err := ct.HoldsRecordContext(ctx); holds || !errors.Is(err, context.Canceled) {
		t.Fatalf("HoldsRecordContext with a done ctx = %v, %v; want false, context.Canceled", holds, err)
	}
	if holds, err := txn.HoldsRecord(); !holds || err != nil {
		t.Fatalf("HoldsRecord = %v, %v; want true", holds, err)
	}
}
