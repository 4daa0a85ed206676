package fleet

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

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
// failed where it did not. A runner that retries each promote, from a
// new process (a Backend that has seen no conflict, so it takes the
// ticket's base as it stands and reads no history), is told the same,
// and the refusal stays recorded once: Refuse reads the key before it
// appends.
func TestRefusalsAtOnceAreEachRecorded(t *testing.T) {
	etcdtest.Beside(t)
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
	again := store.NewOn(f.open(), store.Options{Now: f.clock, Bounds: gates.Bounds{TTL: 14 * 24 * time.Hour}})
	for i := range jobs {
		if res, err := again.Promote(sess[i], store.PromoteRequest{PiVersion: testJob.PiVersion, Require: transcript.Answered}); err != nil || res.Reason != gates.RunIncomplete {
			t.Errorf("job %d retried: %+v, %v; want run-incomplete", i, res, err)
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

// A superseded job's refusal whose key moves on again between the
// decision and the append (another job promotes) is recorded at the newer
// record, its generation in the entry, and the job is told superseded.
// Since 2768007 the re-base went to a copy the loop's turn dropped: every
// try met the same conflict until the request timeout, and the job was
// promote-failed (etcd unavailable: context deadline exceeded).
func TestASupersededRefusalWhoseKeyMovedOnIsRecordedAtTheNewerRecord(t *testing.T) {
	etcdtest.Beside(t)
	f := newFixture(t, etcdtest.Start1(t), func(cfg *Config) { cfg.RequestTimeout = 2 * time.Second })
	key := store.Key("github", "acme/refusals", "moved-on")
	f.run(key, "m0")
	sess, _ := f.job(key, "late")
	f.run(key, "m1")
	var once sync.Once
	f.b.hook = func(point, k string) error {
		if point == hookRefuse && k == key {
			once.Do(func() { f.run(key, "m2") })
		}
		return nil
	}
	res, err := f.s.Promote(sess, store.PromoteRequest{PiVersion: testJob.PiVersion})
	if err != nil || res.Reason != gates.Superseded {
		t.Fatalf("promote = %+v, %v; want superseded", res, err)
	}
	st, err := f.b.meta.Get(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	var at []uint64
	for _, e := range st.History {
		if e.Ticket == sess.Ticket {
			at = append(at, e.Gen)
		}
	}
	if !slices.Equal(at, []uint64{3}) {
		t.Fatalf("the refusal is in the history at gens %v; want once, at gen 3", at)
	}
}
