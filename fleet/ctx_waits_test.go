package fleet

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"sessdb/gates"
	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// silentAt returns a store on f's fleet reached through a proxy, with a
// request timeout of 20 s, and a context that is cancelled 100 ms after
// the store's Backend first passes point for key, where the proxy is cut:
// every etcd request from there on goes unanswered for the whole request
// timeout, unless the caller's context ends it. at runs at the point too.
func silentAt(t *testing.T, f *fixture, point, key string, at func() error) (*store.Store, context.Context) {
	t.Helper()
	p := etcdtest.NewProxy(t, f.c.Endpoint(0))
	b := f.open(func(cfg *Config) {
		cfg.Endpoints = []string{p.URL()}
		cfg.RequestTimeout = 20 * time.Second
	})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	fired := false
	b.hook = func(q, k string) error {
		if q != point || k != key || fired {
			return nil
		}
		fired = true
		p.Blackhole()
		time.AfterFunc(100*time.Millisecond, cancel)
		if at != nil {
			return at()
		}
		return nil
	}
	return store.NewOn(b, store.Options{Now: f.clock}), ctx
}

// A promote whose caller gives up while the record of its refusal waits
// for etcd is given up then, as the wait for its Begin is: promote-failed
// with the caller's cancel, the run left in its job dir, and its retry
// refuses it again, recorded once. Before, the record was bounded by the
// request timeout alone: the caller waited all of it (20 s here) and got
// etcd's silence as a fault, not its own cancel.
func TestAPromoteGivenUpWhileItsRefusalIsRecordedIsTheCancel(t *testing.T) {
	etcdtest.Beside(t)
	f := newFixture(t, etcdtest.Start1(t))
	key := store.Key("github", "ctx-refuse", "x")
	f.run(key, "one")
	stale, jobDir := f.job(key, "stale")
	f.run(key, "two") // the stale job's base moved on: superseded
	was := stagedOf(t, jobDir)
	s, ctx := silentAt(t, f, hookRefuse, key, nil)

	began := time.Now()
	res, err := s.PromoteContext(ctx, stale, store.PromoteRequest{PiVersion: testJob.PiVersion})
	took := time.Since(began)
	if !errors.Is(err, context.Canceled) || res.Promoted || res.Reason != gates.PromoteFailed {
		t.Fatalf("a promote cancelled while its refusal waits = %+v, %v; want promote-failed, context.Canceled", res, err)
	}
	if took > 5*time.Second {
		t.Fatalf("the promote returned %v after the call, cancelled after 100ms: the cancel did not end the refusal's wait", took)
	}
	if now := stagedOf(t, jobDir); !bytes.Equal(now, was) {
		t.Fatalf("the run in the job dir changed: %d -> %d bytes", len(was), len(now))
	}
	refusals := func() int {
		st, err := f.b.meta.Get(context.Background(), key)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, e := range st.History {
			if e.Ticket == stale.Ticket {
				n++
			}
		}
		return n
	}
	if n := refusals(); n != 0 {
		t.Fatalf("the refusal given up is in the history %d times", n)
	}
	if res, err := f.promote(stale); err != nil || res.Reason != gates.Superseded || res.SupersededBy != 2 {
		t.Fatalf("the retry = %+v, %v; want superseded by 2", res, err)
	}
	if n := refusals(); n != 1 {
		t.Fatalf("after the retry the refusal is in the history %d times, want once", n)
	}
}

// A resolve whose copy lost its generation (removed by another host: the
// reads fail) and whose caller gives up while the record is read again
// (View's Lost) is given up then: the cancel, no staged file, no ticket.
// Before, that read was bounded by the request timeout alone, and the
// caller waited all of it for a verdict the store then threw away.
func TestAResolveGivenUpWhileItsLostCopyIsJudgedIsTheCancel(t *testing.T) {
	etcdtest.Beside(t)
	f := newFixture(t, etcdtest.Start1(t))
	key := store.Key("github", "ctx-lost", "x")
	f.run(key, "one")
	file := filepath.Join(f.dir, f.recordFile(key))
	s, ctx := silentAt(t, f, hookSource, key, func() error {
		if err := os.Remove(file); err != nil {
			t.Error(err)
		}
		return errors.New("stale: the test's stand-in for another host's remove")
	})
	jobDir := t.TempDir()

	began := time.Now()
	sess, err := s.ResolveContext(ctx, key, testJob, jobDir)
	took := time.Since(began)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("a resolve cancelled while its lost copy is judged = %+v, %v; want context.Canceled", sess, err)
	}
	if took > 5*time.Second {
		t.Fatalf("the resolve returned %v after the call, cancelled after 100ms: the cancel did not end Lost's read", took)
	}
	for _, name := range []string{store.TicketName, filepath.Join(store.StagedDirName, store.TranscriptName)} {
		if _, err := os.Lstat(filepath.Join(jobDir, name)); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("a resolve given up left %s: %v", name, err)
		}
	}
}
