package fleet

import (
	"sync"
	"sync/atomic"
	"testing"

	"sessdb/gates"
	"sessdb/internal/etcdtest"
	"sessdb/store"
	"sessdb/store/transcript"
)

// A refusal that is not superseded (run-incomplete), decided on a record
// that another job moves on before the refusal is appended, is a conflict
// for the store to decide again (Refuse's doc): the job's base is gone, so
// it is told superseded, and the run-incomplete decided on the old record
// is not recorded at the newer one.
func TestARefusalWhoseKeyMovedOnIsDecidedAgain(t *testing.T) {
	etcdtest.Beside(t)
	f := newFixture(t, etcdtest.Start1(t))
	key := store.Key("github", "acme/refusals", "decided-again")
	f.run(key, "m0")
	sess, _ := f.job(key, "unanswered-late")
	var once sync.Once
	f.b.hook = func(point, k string) error {
		if point == hookRefuse && k == key {
			once.Do(func() { f.run(key, "m1") })
		}
		return nil
	}
	res, err := f.s.Promote(sess, store.PromoteRequest{PiVersion: testJob.PiVersion, Require: transcript.Answered})
	if err != nil || res.Reason != gates.Superseded {
		t.Fatalf("promote = %+v, %v; want superseded", res, err)
	}
	st, err := f.b.meta.Get(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range st.History {
		if e.Ticket == sess.Ticket && e.Outcome == string(gates.RunIncomplete) {
			t.Fatalf("the history records run-incomplete at gen %d for a job decided again as superseded", e.Gen)
		}
	}
}

// The same, with the key moved on before the refusal's own read: a
// promotion that took its ticket's base on the nearest member's word
// (optimistic) reads the key before it records a refusal, and one that
// moved on is decided again, never recorded at the newer record as
// decided on the older. Before (mutant T15 of mutfleet46's sweep: Refuse's
// optimistic `st.Rev != t.st.Rev` dropped), run-incomplete was recorded
// at the newer record, decided on a generation the key had left, and the
// job was told run-incomplete instead of superseded.
func TestAnOptimisticRefusalWhoseKeyMovedOnBeforeItsReadIsDecidedAgain(t *testing.T) {
	etcdtest.Beside(t)
	f := newFixture(t, etcdtest.Start1(t))
	key := store.Key("github", "acme/refusals", "decided-again-optimistic")
	f.run(key, "m0")
	sess, _ := f.job(key, "unanswered-early")
	var moved atomic.Bool
	f.b.hook = func(point, k string) error {
		if point == hookStage && k == key && moved.CompareAndSwap(false, true) {
			f.run(key, "m1") // between Begin's optimistic look and the refusal
		}
		return nil
	}
	res, err := f.s.Promote(sess, store.PromoteRequest{PiVersion: testJob.PiVersion, Require: transcript.Answered})
	if err != nil || res.Reason != gates.Superseded {
		t.Fatalf("promote = %+v, %v; want superseded", res, err)
	}
	st, err := f.b.meta.Get(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range st.History {
		if e.Ticket == sess.Ticket && e.Outcome == string(gates.RunIncomplete) {
			t.Fatalf("the history records run-incomplete at gen %d for a job decided again as superseded", e.Gen)
		}
	}
}

// A refusal on a key with no record writes nothing: a key with no record
// keeps no history (Refuse), and one written there is a history without a
// record, which check reports as a stray and no promotion reads. Before
// (mutant T18 of mutfleet46's sweep: Refuse's `t.st.Rev == 0` return
// dropped), the cold job's run-incomplete was appended under the absent
// record's compare, a stray history made by sessdb itself.
func TestARefusalOnAKeyWithNoRecordWritesNoHistory(t *testing.T) {
	etcdtest.Beside(t)
	f := newFixture(t, etcdtest.Start1(t))
	key := store.Key("github", "acme/refusals", "no-record")
	sess, _ := f.job(key, "unanswered-cold")
	res, err := f.s.Promote(sess, store.PromoteRequest{PiVersion: testJob.PiVersion, Require: transcript.Answered})
	if err != nil || res.Promoted || res.Reason != gates.RunIncomplete {
		t.Fatalf("promote = %+v, %v; want run-incomplete", res, err)
	}
	st, err := f.b.meta.Get(t.Context(), key)
	if err != nil || st.Rev != 0 || len(st.History) != 0 {
		t.Fatalf("the key after a refusal with no record: rev %d, history %+v, %v; want no record and no history", st.Rev, st.History, err)
	}
}
