package fleet

import (
	"fmt"
	"sync"
	"testing"

	"sessdb/gates"
	"sessdb/internal/etcdtest"
	"sessdb/store"
	"sessdb/store/transcript"
)

// Jobs resolved on one base whose runs are all refused at once for what
// they are (run-incomplete under --require answered: a refusal moves no
// base, so none supersedes another) are each told run-incomplete, and
// each refusal is recorded once: a refusal whose history entry lost its
// compare to another job's is no fault. promote-failed would tell each
// worker to retry a run that is refused as it is, and say the store
// failed where it did not.
func TestRefusalsAtOnceAreEachRecorded(t *testing.T) {
	f := newFixture(t, etcdtest.Start1(t))
	key := store.Key("github", "acme/refusals", "at-once")
	f.run(key, "base")
	const jobs = 6
	sess := make([]store.Session, jobs)
	for i := range jobs {
		sess[i], _ = f.job(key, fmt.Sprint("unanswered-", i))
	}
	res, errs := make([]store.PromoteResult, jobs), make([]error, jobs)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range jobs {
		wg.Go(func() {
			<-start
			res[i], errs[i] = f.s.Promote(sess[i], store.PromoteRequest{PiVersion: testJob.PiVersion, Require: transcript.Answered})
		})
	}
	close(start)
	wg.Wait()
	for i := range jobs {
		if errs[i] != nil || res[i].Reason != gates.RunIncomplete {
			t.Errorf("job %d: %+v, %v; want run-incomplete", i, res[i], errs[i])
		}
	}
	st, err := f.b.meta.Get(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	for i := range jobs {
		n := 0
		for _, e := range st.History {
			if e.Ticket == sess[i].Ticket && e.Outcome == string(gates.RunIncomplete) {
				n++
			}
		}
		if n != 1 {
			t.Errorf("job %d's refusal is in the history %d times, want once", i, n)
		}
	}
}
