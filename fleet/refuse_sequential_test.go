package fleet

import (
	"testing"

	"sessdb/gates"
	"sessdb/internal/etcdtest"
	"sessdb/store"
	"sessdb/store/transcript"
)

// Two jobs on one base refused one after the other for the same reason
// (a refusal moves no base) are each recorded: another ticket's refusal
// with the same outcome already in the history is not this one's.
func TestRefusalsOneAfterAnotherAreEachRecorded(t *testing.T) {
	etcdtest.Beside(t)
	f := newFixture(t, etcdtest.Start1(t))
	key := store.Key("github", "acme/refusals", "one-after-another")
	f.run(key, "base")
	first, _ := f.job(key, "unanswered-1")
	second, _ := f.job(key, "unanswered-2")
	for _, sess := range []store.Session{first, second} {
		res, err := f.s.Promote(sess, store.PromoteRequest{PiVersion: testJob.PiVersion, Require: transcript.Answered})
		if err != nil || res.Reason != gates.RunIncomplete {
			t.Fatalf("promote = %+v, %v; want run-incomplete", res, err)
		}
	}
	st, err := f.b.meta.Get(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	for i, sess := range []store.Session{first, second} {
		n := 0
		for _, e := range st.History {
			if e.Ticket == sess.Ticket && e.Outcome == string(gates.RunIncomplete) {
				n++
			}
		}
		if n != 1 {
			t.Errorf("job %d's refusal is in the history %d times, want once", i+1, n)
		}
	}
}
