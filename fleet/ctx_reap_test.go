package fleet

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// A reap given up (Ctrl-C) while it reads a key's record again before
// sweeping that key's orphans (stillOrphans) returns then, with the
// cancel, and sweeps nothing: the read ends with the walk's ctx, as every
// other read of the walk does. Before, that read alone was bounded by the
// request timeout (20 s here, up to 10 minutes by configuration), and an
// etcd that did not answer kept the reap for all of it.
func TestAReapGivenUpWhileAnOrphansRecordIsReadAgainIsTheCancel(t *testing.T) {
	etcdtest.Beside(t)
	f := newFixture(t, etcdtest.Start1(t))
	one, two := store.Key("github", "ctx-reap", "one"), store.Key("github", "ctx-reap", "two")
	f.run(one, "a")
	orphan := f.recordFile(one)
	f.run(one, "b")
	f.run(two, "c")
	path := filepath.Join(f.dir, orphan)

	p := etcdtest.NewProxy(t, f.c.Endpoint(0))
	r := f.open(func(cfg *Config) {
		cfg.Endpoints = []string{p.URL()}
		cfg.RequestTimeout = 20 * time.Second
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Progress is called before the second key is judged: from there on
	// the walk's only etcd request is the orphan's record read again.
	progress := func(done, total int) {
		if done == 1 && total == 2 {
			p.Blackhole()
			time.AfterFunc(100*time.Millisecond, cancel)
		}
	}
	began := time.Now()
	res, err := r.Reap(ctx, ReapOptions{Grace: time.Hour, Progress: progress,
		// Two days on: one's first generation, its record's promotion
		// past the grace, is an orphan.
		Now: func() time.Time { return time.Now().Add(48 * time.Hour) }})
	took := time.Since(began)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("a reap cancelled while an orphan's record is read again = %+v, %v; want context.Canceled", res, err)
	}
	if took > 5*time.Second {
		t.Fatalf("the reap returned %v after the call, cancelled after 100ms: the cancel did not end the read", took)
	}
	if len(res.Swept) != 0 {
		t.Errorf("a reap given up swept %v", res.Swept)
	}
	if _, err := os.Lstat(path); err != nil {
		t.Errorf("the orphan after a reap given up: %v; want it left for the next reap", err)
	}
}
