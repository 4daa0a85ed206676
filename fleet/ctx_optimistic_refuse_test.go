package fleet

import (
	"context"
	"errors"
	"testing"
	"time"

	"sessdb/gates"
	"sessdb/internal/etcdtest"
	"sessdb/store"
	"sessdb/store/transcript"
)

// A refusal decided on the ticket's base unread (an optimistic txn: the
// nearest member showed the key at the job's base) reads the key before
// its record, to decide again if it moved on; a caller that gives up
// while that read waits for etcd is given up then, as during the record's
// appends: promote-failed with its cancel, well within the request
// timeout, nothing recorded, and the retry records the refusal once.
// 3918004's test cut etcd at the append (hookRefuse), after that read, so
// a read bounded by the request timeout alone (mutant F02) passed it.
func TestAnOptimisticRefusalGivenUpWhileItsKeyIsReadIsTheCancel(t *testing.T) {
	etcdtest.Beside(t)
	f := newFixture(t, etcdtest.Start1(t))
	key := store.Key("github", "ctx-refuse", "optimistic")
	f.run(key, "base")
	sess, _ := f.job(key, "unanswered")
	s, ctx := silentAt(t, f, hookStage, key, nil)
	req := store.PromoteRequest{PiVersion: testJob.PiVersion, Require: transcript.Answered}

	began := time.Now()
	res, err := s.PromoteContext(ctx, sess, req)
	took := time.Since(began)
	if !errors.Is(err, context.Canceled) || res.Promoted || res.Reason != gates.PromoteFailed {
		t.Fatalf("a promote cancelled while its refusal reads the key = %+v, %v; want promote-failed, context.Canceled", res, err)
	}
	if took > 5*time.Second {
		t.Fatalf("the promote returned %v after the call, cancelled after 100ms: the cancel did not end the refusal's read", took)
	}
	refusals := func() int {
		st, err := f.b.meta.Get(context.Background(), key)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, e := range st.History {
			if e.Ticket == sess.Ticket {
				n++
			}
		}
		return n
	}
	if n := refusals(); n != 0 {
		t.Fatalf("the refusal given up is in the history %d times", n)
	}
	if res, err := f.s.Promote(sess, req); err != nil || res.Reason != gates.RunIncomplete {
		t.Fatalf("the retry = %+v, %v; want run-incomplete", res, err)
	}
	if n := refusals(); n != 1 {
		t.Fatalf("after the retry the refusal is in the history %d times, want once", n)
	}
}
