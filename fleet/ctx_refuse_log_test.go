package fleet

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// A promote given up while its refusal's record waits for etcd is logged
// as a cancel (session_promote_cancelled, step refusal), not as the
// store failing (session_store_failed, an error an operator is paged
// for): the record's error wraps the caller's cancel, and the store takes
// it for one. 3918004 dropped notCancelled around the record; its test
// checked the result and the error, which are the same either way, so a
// record still marked uncancelled (mutant S06) passed it.
func TestAPromoteGivenUpWhileItsRefusalIsRecordedLogsTheCancel(t *testing.T) {
	etcdtest.Beside(t)
	f := newFixture(t, etcdtest.Start1(t))
	key := store.Key("github", "ctx-refuse", "logged")
	f.run(key, "one")
	stale, _ := f.job(key, "stale")
	f.run(key, "two") // the stale job's base moved on: superseded
	p := etcdtest.NewProxy(t, f.c.Endpoint(0))
	b := f.open(func(cfg *Config) {
		cfg.Endpoints = []string{p.URL()}
		cfg.RequestTimeout = 20 * time.Second
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fired := false
	b.hook = func(q, k string) error {
		if q == hookRefuse && k == key && !fired {
			fired = true
			p.Blackhole()
			time.AfterFunc(100*time.Millisecond, cancel)
		}
		return nil
	}
	var log bytes.Buffer
	s := store.NewOn(b, store.Options{Now: f.clock, Logger: zerolog.New(&log)})
	if _, err := s.PromoteContext(ctx, stale, store.PromoteRequest{PiVersion: testJob.PiVersion}); !errors.Is(err, context.Canceled) {
		t.Fatalf("PromoteContext = %v; want context.Canceled", err)
	}
	var cancelled, failed int
	for _, l := range bytes.Split(bytes.TrimSpace(log.Bytes()), []byte("\n")) {
		var e struct{ Message, Step string }
		if len(l) == 0 || json.Unmarshal(l, &e) != nil {
			continue
		}
		switch {
		case e.Message == "session_promote_cancelled" && e.Step == "refusal":
			cancelled++
		case e.Message == "session_store_failed":
			failed++
		}
	}
	if cancelled != 1 || failed != 0 {
		t.Fatalf("the log has %d session_promote_cancelled lines at step refusal and %d session_store_failed; want 1 and 0:\n%s", cancelled, failed, log.String())
	}
}
