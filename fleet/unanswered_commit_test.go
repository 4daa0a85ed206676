package fleet

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"sessdb/gates"
	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// A commit whose first and only try went unanswered for the whole
// request timeout (the link cut one way as it was sent: the commit is
// served, its answer never arrives), with one endpoint (no try sent
// again), is unsure though no retry followed: the promotion is
// promote-failed, and its file, which the record now names, is kept. A
// retry with the same ticket then repeats the promotion. Dropping the
// unsure mark that an unanswered error gives in Commit's last branch
// (the tries' backoff had no time left) removed the file under the
// record that names it.
func TestACommitWhoseOnlyTryWentUnansweredKeepsItsFile(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	key := store.Key("github", "network", "commit-once-held")
	f.run(key, "base")
	p := etcdtest.NewProxy(t, c.Endpoint(0))
	b := f.open(func(cfg *Config) { cfg.Endpoints, cfg.RequestTimeout = []string{p.URL()}, time.Second })
	connected(t, b)
	s := store.NewOn(b, store.Options{Bounds: gates.Bounds{TTL: 14 * 24 * time.Hour}})
	sess, jobDir := resolveOn(t, s, key)
	appendMarker(t, jobDir, "held")
	b.hook = func(point, k string) error {
		if point == hookCommit && k == key {
			p.BlackholeAnswers()
		}
		return nil
	}
	res, err := s.Promote(sess, store.PromoteRequest{PiVersion: testJob.PiVersion})
	b.hook = nil
	p.Heal()
	if res.Promoted || res.Reason != gates.PromoteFailed || err == nil {
		t.Fatalf("promote whose commit went unanswered = %+v, %v; want promote-failed", res, err)
	}
	file := f.recordFile(key)
	st, _ := f.b.meta.GetRecord(t.Context(), key)
	if st.Record.Transcript == nil || st.Record.Transcript.Gen != 2 {
		t.Fatalf("the record names %s: the commit did not land, so this test proves nothing", file)
	}
	if _, serr := os.Lstat(filepath.Join(f.dir, file)); serr != nil {
		t.Fatalf("the landed commit's file, which the record names: %v", serr)
	}
	f.holds(key, "held", 2)
	again, err := f.promote(sess)
	if err != nil || !again.Promoted || !again.Repeat || again.Gen != 2 {
		t.Errorf("the job's retry = %+v, %v; want its promotion repeated, gen 2", again, err)
	}
}
