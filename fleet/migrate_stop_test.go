package fleet

import (
	"context"
	"errors"
	"testing"
	"time"

	"sessdb/internal/etcdtest"
	"sessdb/migrate"
	"sessdb/store"
)

// A migration stopped (Ctrl-C, SIGTERM) while a key's etcd request gets no
// answer returns at the stop, interrupted, and leaves a run that a re-run
// finishes. Before, each key's read and create took context.Background():
// the stop waited the whole request timeout (10 s here, up to 10 minutes
// by configuration) per worker. A key whose read the stop cut is left as
// it was and not printed, as a key never started; a create the stop cut
// may have landed (here it did, and only then came the stop: its answer
// alone is held), so its key is
// printed failed with its file kept, and the re-run finds its record.
func TestAMigrationStoppedWhileEtcdIsSilentEndsAtTheStop(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	for _, tc := range []struct {
		name  string
		to    bool
		point string
		cut   func(*etcdtest.Proxy)
		// printed: the key's report is delivered (its create may have
		// landed), with this action.
		printed migrate.Action
		again   []migrate.Action // the re-run's action, one of
	}{
		{"to etcd, its read", true, hookMigrateRead, (*etcdtest.Proxy).Blackhole, "", []migrate.Action{migrate.Migrated}},
		{"to etcd, its create", true, hookMigrateCopy, (*etcdtest.Proxy).BlackholeAnswers, migrate.Failed, []migrate.Action{migrate.Already}},
		{"from etcd, its read", false, hookMigrateRead, (*etcdtest.Proxy).Blackhole, "", []migrate.Action{migrate.Migrated}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, c)
			key := store.Key("github", "migrate-stop", tc.name)
			var root string
			if tc.to {
				root = promotedOnHost(t, key, "a")
			} else {
				f.run(key, "a")
				root = t.TempDir()
			}
			p := etcdtest.NewProxy(t, c.Endpoint(0))
			b := f.open(func(cfg *Config) {
				cfg.Endpoints = []string{p.URL()}
				cfg.RequestTimeout = 10 * time.Second
			})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var stopAt time.Time
			stopped := make(chan struct{})
			stop := func() { stopAt = time.Now(); cancel(); close(stopped) }
			b.hook = func(point, k string) error {
				if point != tc.point || k != key {
					return nil
				}
				tc.cut(p)
				if tc.printed == "" {
					time.AfterFunc(100*time.Millisecond, stop)
					return nil
				}
				// The stop once the create has landed (read on
				// another connection): only its answer is held.
				go func() {
					for f.recordFileOrErr(key) == "" {
						time.Sleep(10 * time.Millisecond)
					}
					stop()
				}()
				return nil
			}
			var got []MigrateReport
			visit := func(r MigrateReport) error { got = append(got, r); return nil }
			var sum MigrateSummary
			var err error
			if tc.to {
				sum, err = ToEtcd(ctx, root, b, migOpts(), visit)
			} else {
				sum, err = FromEtcd(ctx, b, root, migOpts(), visit)
			}
			<-stopped
			took := time.Since(stopAt)
			t.Logf("returned %v after the stop", took)
			if !errors.Is(err, context.Canceled) || !sum.Interrupted {
				t.Fatalf("stopped while etcd is silent: %+v, %v; want context.Canceled, interrupted", sum, err)
			}
			if took > 2*time.Second {
				t.Errorf("the migration returned %v after the stop: the stop did not end the key's request", took)
			}
			switch {
			case tc.printed == "" && len(got) != 0:
				t.Errorf("the key whose read the stop cut was printed: %+v; want it left as a key never started", got)
			case tc.printed != "" && (len(got) != 1 || got[0].Action != tc.printed):
				t.Errorf("the key whose create the stop cut: %+v; want it printed %s", got, tc.printed)
			}
			t.Logf("printed: %+v", got)
			p.Heal()
			again, _ := runMigration(t, tc.to, root, f.b, migOpts())
			r := again[key]
			ok := false
			for _, a := range tc.again {
				ok = ok || r.Action == a
			}
			if !ok {
				t.Fatalf("the re-run: %s (%s); want one of %v", r.Action, r.Cause, tc.again)
			}
			if tc.to {
				f.holds(key, "a", 1)
				if files := f.files(key); len(files) != 1 {
					t.Errorf("the key's files after the re-run: %v; want its record's alone", files)
				}
				return
			}
			sess, jobDir := resolveOn(t, onRoot(t, root)(store.Options{}), key)
			if m := markers(stagedOf(t, jobDir)); !sess.Resume || len(m) == 0 || m[len(m)-1] != "a" {
				t.Errorf("the key on the root after the re-run resumes %v (%s); want \"a\"", m, sess.Reason)
			}
		})
	}
}

// recordFileOrErr is recordFile for a goroutine of the test's: "" where
// the read fails.
func (f *fixture) recordFileOrErr(key string) string {
	st, err := f.b.meta.GetRecord(context.Background(), key)
	if err != nil || st.Record.Transcript == nil {
		return ""
	}
	return st.Record.Transcript.File
}
