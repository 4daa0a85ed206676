package fleet

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"sessdb/gates"
	"sessdb/internal/etcdtest"
	"sessdb/internal/faults"
	"sessdb/store"
)

// holdsRecordBig is half the size of the run whose file a retry's
// HoldsRecord reads in the test below (its marker is written twice): big
// enough that reading it all is a wait a cancel can cut short.
const holdsRecordBig = 4 << 20

// A ticket's retry of the promotion the key's record names reads that
// generation's file (HoldsRecord). A caller that gives up while it reads
// is given up then, as in every other wait before the commit:
// promote-failed with the caller's cancel, nothing written to etcd or the
// dir, the run in its job dir, and the retry with a live context is the
// repeat. Before, the read took context.Background(): it went on to the
// file's end, and the promote returned the repeat's "promoted" with a nil
// error after its caller had cancelled.
func TestARetryGivenUpWhileHoldsRecordReadsIsTheCancel(t *testing.T) {
	f := newFixture(t, etcdtest.Start(t, etcdtest.Options{Members: 1}))
	key := store.Key("github", "ctx-holds", "x")
	f.run(key, "before")
	sess, jobDir := f.job(key, strings.Repeat("x", holdsRecordBig))
	run := stagedOf(t, jobDir)
	if res, err := f.promote(sess); err != nil || !res.Promoted || res.Gen != 2 {
		t.Fatalf("promote = %+v, %v; want gen 2", res, err)
	}
	before, err := f.b.meta.Get(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	files := f.files(key)

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
	res, err := f.s.PromoteContext(ctx, sess, store.PromoteRequest{PiVersion: testJob.PiVersion})
	took := time.Since(cancelled)
	faults.Set(nil)
	if cancelled.IsZero() {
		t.Fatal("the retry never asked HoldsRecord")
	}
	t.Logf("returned %v after the cancel, reading %d bytes", took, len(run))
	if !errors.Is(err, context.Canceled) || res.Promoted || res.Repeat || res.Reason != gates.PromoteFailed {
		t.Fatalf("a retry given up while HoldsRecord reads = %+v, %v; want promote-failed, context.Canceled", res, err)
	}
	after, err := f.b.meta.Get(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	if after.Rev != before.Rev || !reflect.DeepEqual(after.History, before.History) {
		t.Errorf("etcd changed: rev %d, was %d", after.Rev, before.Rev)
	}
	if now := f.files(key); !reflect.DeepEqual(now, files) {
		t.Errorf("the key's files are %v, were %v", now, files)
	}
	if !bytes.Equal(stagedOf(t, jobDir), run) {
		t.Fatal("the run left its job dir")
	}
	if retry, err := f.promote(sess); err != nil || !retry.Promoted || !retry.Repeat || retry.Gen != 2 {
		t.Fatalf("the retry with a live context = %+v, %v; want a repeat of gen 2", retry, err)
	}
	if b, err := os.ReadFile(filepath.Join(f.dir, f.recordFile(key))); err != nil || !bytes.Equal(b, run) {
		t.Fatalf("the record's file is not the run (%v)", err)
	}
}

// The fleet's KeyTxn takes the caller's context for HoldsRecord
// (store.ContextKeyTxn): a context already done reads nothing and says
// so, with its error, where HoldsRecord alone reads the file whole.
func TestHoldsRecordContextStopsItsRead(t *testing.T) {
	f := newFixture(t, etcdtest.Start(t, etcdtest.Options{Members: 1}))
	key := store.Key("github", "ctx-holds-txn", "x")
	f.run(key, "one")
	st, err := f.b.meta.Get(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	txn, err := f.b.Begin(key, baseOf(st.Record, st.Rev))
	if err != nil {
		t.Fatal(err)
	}
	defer txn.Close()
	ct, ok := txn.(store.ContextKeyTxn)
	if !ok {
		t.Fatal("the fleet's KeyTxn is no store.ContextKeyTxn")
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

	// A cancel the read's second look sees: a file of two megabytes and
	// more is looked at before each, and stops there.
	big := store.Key("github", "ctx-holds-txn", "big")
	f.run(big, strings.Repeat("x", 1<<20))
	st, err = f.b.meta.Get(context.Background(), big)
	if err != nil {
		t.Fatal(err)
	}
	txn, err = f.b.Begin(big, baseOf(st.Record, st.Rev))
	if err != nil {
		t.Fatal(err)
	}
	defer txn.Close()
	second := &cancelAtLook{Context: context.Background(), at: 2}
	if holds, err := txn.(store.ContextKeyTxn).HoldsRecordContext(second); holds || !errors.Is(err, context.Canceled) {
		t.Fatalf("HoldsRecordContext cancelled at its second look = %v, %v (%d looks); want false, context.Canceled", holds, err, second.looks.Load())
	}
}

// cancelAtLook is a Context whose Err is context.Canceled from its at-th
// look on, and whose Done is never closed.
type cancelAtLook struct {
	context.Context
	at    int64
	looks atomic.Int64
}

func (c *cancelAtLook) Done() <-chan struct{} { return nil }
func (c *cancelAtLook) Err() error {
	if c.looks.Add(1) >= c.at {
		return context.Canceled
	}
	return nil
}
