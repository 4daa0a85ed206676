package fleet

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"sessdb/db"
	"sessdb/fleet/etcdmeta"
	"sessdb/gates"
	"sessdb/internal/etcdtest"
	"sessdb/internal/faults"
	"sessdb/store"
)

// refusalOn begins a promotion of key (its base read from etcd, not
// taken optimistically) and returns the txn and a run-incomplete refusal
// of ticket at the key's generation.
func refusalOn(t *testing.T, f *fixture, key, ticket string) (store.KeyTxn, db.HistoryEntry) {
	t.Helper()
	txn, err := f.b.Begin(key, store.Base{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { txn.Close() })
	_, _, base := txn.State()
	return txn, db.HistoryEntry{Gen: base.Gen, At: db.RecordedAt(time.Now()), Outcome: string(gates.RunIncomplete), Ticket: ticket, Job: "job-" + ticket}
}

// unavailableAt makes every guarded write's try that reaches
// faults.EtcdWriteBeforeGuess fail as etcd unavailable, nothing sent,
// while fail says so.
func unavailableAt(t *testing.T, fail func() bool) {
	faults.Set(func(p faults.Point) error {
		if p == faults.EtcdWriteBeforeGuess && fail() {
			return fmt.Errorf("%w: the test's stand-in for a member that took no request", etcdmeta.ErrUnavailable)
		}
		return nil
	})
	t.Cleanup(func() { faults.Set(nil) })
}

// A refusal whose append etcd did not take once (unavailable) is tried
// again on the same record, after the history is read and found without
// it: the record did not change, so it is no conflict (Refuse's doc: a
// record that changed meanwhile is store.ErrConflict), and the refusal is
// recorded once. Handed back as a conflict, the store decided the job
// again for nothing, and with a second failure the job was
// promote-failed.
func TestARefusalNotTakenOnceIsRecordedOnTheSameRecord(t *testing.T) {
	f := newFixture(t, etcdtest.Start1(t))
	key := store.Key("github", "acme/refusals", "not-taken-once")
	f.run(key, "m0")
	txn, e := refusalOn(t, f, key, "not-taken-once")
	var tries atomic.Int32
	unavailableAt(t, func() bool { return tries.Add(1) == 1 })
	if err := txn.Refuse(e); err != nil {
		t.Fatalf("Refuse, its first try not taken by etcd = %v; want nil (the record did not move)", err)
	}
	faults.Set(nil)
	st, err := f.b.meta.Get(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, x := range st.History {
		if x.Ticket == e.Ticket {
			n++
		}
	}
	if n != 1 || tries.Load() < 2 {
		t.Fatalf("the refusal is in the history %d times after %d tries; want once, after a second try", n, tries.Load())
	}
}

// A refusal while etcd takes none of its appends ends at the request
// timeout with etcd unavailable (the job promote-failed, to try again),
// as every write of the fleet does; it never retries past it, nor
// faster than etcdmeta.Backoff's doubling pause. So does a
// refusal taken on the ticket's base unread (an optimistic Begin) while
// etcd answers none of its reads: Refuse reads the key before it appends,
// and a read that failed is never a refusal recorded.
func TestARefusalWhileEtcdTakesNothingEndsAsUnavailable(t *testing.T) {
	// In process: etcd taking nothing is FailNext's, an interceptor fault.
	f := newFixture(t, etcdtest.Start(t, etcdtest.Options{Members: 1, InProcess: true}), func(cfg *Config) { cfg.RequestTimeout = time.Second })
	key := store.Key("github", "acme/refusals", "takes-nothing")
	f.run(key, "m0")
	txn, e := refusalOn(t, f, key, "takes-nothing")
	unavailable := func(what string, refuse func() error) {
		t.Helper()
		done := make(chan error, 1)
		go func() { done <- refuse() }()
		select {
		case err := <-done:
			if !errors.Is(err, etcdmeta.ErrUnavailable) {
				t.Fatalf("Refuse while etcd takes %s = %v; want etcd unavailable", what, err)
			}
		case <-time.After(time.Minute):
			// A hang guard, not a timing assertion: the request timeout is 1 s.
			t.Fatalf("Refuse while etcd takes %s has not returned a minute on (request timeout 1 s)", what)
		}
	}
	_, _, base := txn.State()
	opt, err := f.b.Begin(key, base)
	if err != nil {
		t.Fatal(err)
	}
	defer opt.Close()
	var tries atomic.Int32
	unavailableAt(t, func() bool { tries.Add(1); return true })
	unavailable("no append", func() error { return txn.Refuse(e) })
	// Backoff's pauses double from 25 ms to 400 ms: 1 s holds 6 tries at
	// most (a loaded machine makes fewer, never more). Each try at the
	// first pause would send some 40.
	if n := tries.Load(); n > 6 {
		t.Errorf("Refuse sent %d tries within its 1 s request timeout; want the doubling backoff's 6 at most", n)
	}

	const txnMethod = "/etcdserverpb.KV/Txn" // the read of a record with its history
	f.c.FailNext(txnMethod, 0, 1<<30)
	defer f.c.FailNext(txnMethod, 0, 0)
	e.Ticket, e.Job = "takes-nothing-2", "job-takes-nothing-2"
	unavailable("no read", func() error { return opt.Refuse(e) })
}

// A superseded refusal whose append etcd did not take, and whose key
// another job moved on meanwhile, is recorded at the newer record (its
// generation in the entry) once the history is read again: the key moved
// on once more supersedes the job all the more (Refuse's doc). Handed
// back as a conflict, it cost the store a second decision, and a job on a
// busy key was promote-failed. Any other refusal is true only of the
// record it was decided on: on the same turn of events it is
// store.ErrConflict, for the store to decide again, and nothing is
// recorded.
func TestASupersededRefusalNotTakenWhileTheKeyMovedOnIsRecordedAtTheNewerRecord(t *testing.T) {
	f := newFixture(t, etcdtest.Start1(t))
	t.Cleanup(func() { faults.Set(nil) })
	for _, outcome := range []gates.Reason{gates.Superseded, gates.RunIncomplete} {
		key := store.Key("github", "acme/refusals", "not-taken-moved-"+string(outcome))
		f.run(key, "m0")
		txn, e := refusalOn(t, f, key, "not-taken-moved")
		e.Outcome = string(outcome)
		var tries atomic.Int32
		faults.Set(func(p faults.Point) error {
			if p == faults.EtcdWriteBeforeGuess && tries.Add(1) == 1 {
				f.run(key, "m1") // another job promotes while this try goes unanswered
				return fmt.Errorf("%w: the test's stand-in for a member that took no request", etcdmeta.ErrUnavailable)
			}
			return nil
		})
		err := txn.Refuse(e)
		faults.Set(nil)
		st, gerr := f.b.meta.Get(t.Context(), key)
		if gerr != nil {
			t.Fatal(gerr)
		}
		var at []uint64
		for _, x := range st.History {
			if x.Ticket == e.Ticket {
				at = append(at, x.Gen)
			}
		}
		switch want := st.Record.Transcript.Gen; {
		case outcome != gates.Superseded:
			if !errors.Is(err, store.ErrConflict) || len(at) != 0 {
				t.Errorf("a %s refusal, its first try not taken while the key moved on = %v, recorded at gens %v; want store.ErrConflict, nothing recorded", outcome, err, at)
			}
		case err != nil:
			t.Errorf("Refuse, its first try not taken while the key moved on = %v; want nil (recorded at the newer record)", err)
		case len(at) != 1 || at[0] != want:
			t.Errorf("the refusal is in the history at gens %v; want once, at the newer record's gen %d", at, want)
		}
		txn.Close()
	}
}

// A commit while etcd takes none of its tries ends as a refusal does: at
// the request timeout, etcd unavailable, the job promote-failed; its
// tries keep etcdmeta.Backoff's doubling pause, 6 at most in 1 s.
func TestACommitWhileEtcdTakesNothingBacksOff(t *testing.T) {
	f := newFixture(t, etcdtest.Start1(t), func(cfg *Config) { cfg.RequestTimeout = time.Second })
	key := store.Key("github", "acme/commits", "takes-nothing")
	f.run(key, "m0")
	sess, _ := f.job(key, "m1")
	var tries atomic.Int32
	unavailableAt(t, func() bool { tries.Add(1); return true })
	res, err := f.promote(sess)
	if !errors.Is(err, etcdmeta.ErrUnavailable) || res.Promoted || res.Reason != gates.PromoteFailed {
		t.Fatalf("promote while etcd takes nothing = %+v, %v; want promote-failed, etcd unavailable", res, err)
	}
	if n := tries.Load(); n < 1 || n > 6 {
		t.Errorf("the commit sent %d tries within its 1 s request timeout; want the doubling backoff's 6 at most", n)
	}
}

// The same, with the read of the history that follows the try not taken
// failing too (a leader change overtook it): a failed read is no answer
// about the refusal, and Refuse tries again within its request timeout,
// as it does after the append itself went unanswered. Before (mutant T24
// of mutfleet46's sweep: Refuse's `gerr != nil: continue` -> `return
// gerr`), the read's etcd-unavailable was the refusal's, and the job
// promote-failed at once though etcd answered the next request.
func TestARefusalWhoseReadAfterATryNotTakenFailsOnceIsRecorded(t *testing.T) {
	// In process: the failed read is FailNext's, an interceptor fault.
	f := newFixture(t, etcdtest.Start(t, etcdtest.Options{Members: 1, InProcess: true}))
	key := store.Key("github", "acme/refusals", "not-taken-read-failed")
	f.run(key, "m0")
	txn, e := refusalOn(t, f, key, "not-taken-read-failed")
	var tries atomic.Int32
	unavailableAt(t, func() bool {
		if tries.Add(1) == 1 {
			// The read that follows this try fails once, as a leader
			// change fails it.
			f.c.FailNext("/etcdserverpb.KV/Txn", 0, 1)
			return true
		}
		return false
	})
	defer f.c.FailNext("/etcdserverpb.KV/Txn", 0, 0)
	if err := txn.Refuse(e); err != nil {
		t.Fatalf("Refuse, its first try not taken and the read after it failed = %v; want nil (recorded)", err)
	}
	faults.Set(nil)
	st, err := f.b.meta.Get(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, x := range st.History {
		if x.Ticket == e.Ticket {
			n++
		}
	}
	if n != 1 || tries.Load() < 2 {
		t.Fatalf("the refusal is in the history %d times after %d tries; want once, after a second try", n, tries.Load())
	}
}

// A refusal whose append landed, its answer lost, and whose key another
// job moved on before the history was read again, is recorded: the read
// finds the entry, at the record it was decided on, and Refuse is done
// (nil), whatever the key did after. Before (mutant T25 of mutfleet46's
// sweep: Refuse's Holds after the read dropped), the record moved on made
// it a conflict: the store decided the job again, told it superseded
// instead of run-incomplete, and recorded the ticket a second time.
func TestARefusalLandedItsAnswerLostUnderAKeyMovedOnIsRecordedOnce(t *testing.T) {
	f := newFixture(t, etcdtest.Start1(t))
	key := store.Key("github", "acme/refusals", "landed-answer-lost-moved")
	f.run(key, "m0")
	txn, e := refusalOn(t, f, key, "landed-answer-lost-moved")
	var tries atomic.Int32
	faults.Set(func(p faults.Point) error {
		if p == faults.EtcdWriteAfterCommit && tries.Add(1) == 1 {
			f.run(key, "m1") // another job promotes while the answer is lost
			return fmt.Errorf("%w: the test's stand-in for an answer lost after the append landed", etcdmeta.ErrUnavailable)
		}
		return nil
	})
	t.Cleanup(func() { faults.Set(nil) })
	if err := txn.Refuse(e); err != nil {
		t.Fatalf("Refuse, its append landed and its answer lost while the key moved on = %v; want nil (recorded)", err)
	}
	faults.Set(nil)
	st, err := f.b.meta.Get(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	var at []uint64
	for _, x := range st.History {
		if x.Ticket == e.Ticket {
			at = append(at, x.Gen)
		}
	}
	if len(at) != 1 || at[0] != e.Gen {
		t.Fatalf("the refusal is in the history at gens %v; want once, at gen %d, the record it was decided on", at, e.Gen)
	}
}
