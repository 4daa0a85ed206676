package fleet

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sessdb/fleet/etcdmeta"
	"sessdb/gates"
	"sessdb/internal/etcdtest"
	"sessdb/migrate"
	"sessdb/store"
)

// netStep is one of a worker's or an operator's commands, run on a
// Backend whose link to etcd is cut or slowed: it returns what it ended
// with, and why that is not the named outcome ("" when it is).
type netStep struct {
	name string
	run  func(t *testing.T, b *Backend) (got string, wrong string)
}

// netSteps are resolve, promote, dump, check, check --repair, reap and
// migrate both ways, on a fleet of f (a key promoted once, with a job
// resolved on it before the fault and an orphan past its grace; an
// expired key; a sessions root with one key to move in).
func netSteps(t *testing.T, f *fixture) []netStep {
	key := store.Key("github", "network", "live")
	f.run(key, "one")
	f.now = time.Now().Add(-30 * 24 * time.Hour)
	f.run(store.Key("github", "network", "expired"), "old")
	f.now = time.Time{}
	orphan := filepath.Join(f.dir, key, "0000000000000001-0123456789abcdef.jsonl")
	if err := os.WriteFile(orphan, []byte(testHeader), 0o600); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-2 * time.Hour)
	os.Chtimes(orphan, old, old)
	root := t.TempDir()
	hs, err := store.New(root, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	hsess, hjob := resolveOn(t, hs, store.Key("github", "network", "moved"))
	appendMarker(t, hjob, "moved")
	if res, err := hs.Promote(hsess, store.PromoteRequest{PiVersion: testJob.PiVersion}); err != nil || !res.Promoted {
		t.Fatalf("promote on the root: %+v, %v", res, err)
	}
	unavailable := func(what string, err error) (string, string) {
		if !errors.Is(err, etcdmeta.ErrUnavailable) {
			return fmt.Sprint(err), what + " is not etcd unavailable"
		}
		return fmt.Sprint(err), ""
	}
	return []netStep{
		{"resolve", func(t *testing.T, b *Backend) (string, string) {
			s := store.NewOn(b, store.Options{Bounds: gates.Bounds{TTL: 14 * 24 * time.Hour}})
			sess, jobDir, err := resolveErr(s, key, t.TempDir())
			if err != nil {
				return err.Error(), "a fault, not a verdict"
			}
			got := string(sess.Reason)
			if sess.Resume || sess.Reason != gates.StoreUnavailable || sess.Base != (store.Base{}) || len(stagedOf(t, jobDir)) != 0 {
				return got, "not store-unavailable with no base and nothing staged"
			}
			return got, ""
		}},
		{"promote", func(t *testing.T, b *Backend) (string, string) {
			sess, jobDir := f.job(key, "two") // resolved on the fixture's own link
			s := store.NewOn(b, store.Options{Bounds: gates.Bounds{TTL: 14 * 24 * time.Hour}})
			res, err := s.Promote(sess, store.PromoteRequest{PiVersion: testJob.PiVersion})
			got := fmt.Sprintf("%s (%v)", res.Reason, err)
			if res.Promoted || res.Reason != gates.PromoteFailed || !errors.Is(err, etcdmeta.ErrUnavailable) {
				return got, "not promote-failed, etcd unavailable"
			}
			if m := markers(stagedOf(t, jobDir)); len(m) == 0 || m[len(m)-1] != "two" {
				return got, "the job's transcript left its job dir"
			}
			return got, ""
		}},
		{"dump", func(t *testing.T, b *Backend) (string, string) {
			return unavailable("dump", b.Inspect(t.Context(), InspectOptions{}, func(Report) error { return nil }))
		}},
		{"check", func(t *testing.T, b *Backend) (string, string) {
			_, err := b.Check(t.Context(), CheckOptions{}, func(store.Finding) error { return nil })
			return unavailable("check", err)
		}},
		{"check --repair", func(t *testing.T, b *Backend) (string, string) {
			_, err := b.Check(t.Context(), CheckOptions{Repair: true}, func(store.Finding) error { return nil })
			got, wrong := unavailable("check --repair", err)
			if _, serr := os.Stat(orphan); wrong == "" && serr != nil {
				return got, "the orphan was removed"
			}
			return got, wrong
		}},
		{"reap", func(t *testing.T, b *Backend) (string, string) {
			r, err := b.Reap(t.Context(), ReapOptions{TTL: 14 * 24 * time.Hour})
			got, wrong := unavailable("reap", err)
			if wrong == "" && (len(r.Removed) != 0 || len(r.Swept) != 0) {
				return fmt.Sprintf("%+v", r), "reap removed something"
			}
			return got, wrong
		}},
		{"migrate --from etcd", func(t *testing.T, b *Backend) (string, string) {
			_, err := FromEtcd(t.Context(), b, t.TempDir(), MigrateOptions{}, func(MigrateReport) error { return nil })
			return unavailable("migrate --from etcd", err)
		}},
		{"migrate --to etcd", func(t *testing.T, b *Backend) (string, string) {
			var failed []string
			sum, err := ToEtcd(t.Context(), root, b, MigrateOptions{}, func(r MigrateReport) error {
				if r.Action == migrate.Failed {
					failed = append(failed, r.Cause)
				}
				return nil
			})
			got := fmt.Sprintf("%+v, %v: %s", sum, err, strings.Join(failed, "; "))
			if err != nil || sum.Failed != 1 || sum.Migrated != 0 || !strings.Contains(strings.Join(failed, ""), "etcd unavailable") {
				return got, "not the key failed, etcd unavailable"
			}
			return got, ""
		}},
	}
}

func resolveErr(s *store.Store, key, jobDir string) (store.Session, string, error) {
	sess, err := s.Resolve(key, testJob, jobDir)
	return sess, jobDir, err
}

// Every command on a link to etcd that takes connections and answers
// nothing (a blackhole), or answers too late (a slow link), ends within
// the request timeout, and its retries' and the lock's, with its named
// outcome: a resolve store-unavailable, a promote promote-failed with the
// job's transcript in place, the operators' commands etcd unavailable;
// nothing is removed. Three links: cut under a Backend that is connected
// (a long-running host), cut before a Backend is opened (a command's
// fresh process), and slowed so that no answer comes within the timeout.
func TestCommandsOnABlackholedLinkEndWithinTheTimeout(t *testing.T) {
	const timeout = 500 * time.Millisecond
	for _, link := range []string{"cut-connected", "cut-fresh", "slow"} {
		t.Run(link, func(t *testing.T) {
			c := etcdtest.Start1(t)
			f := newFixture(t, c)
			steps := netSteps(t, f)
			p := etcdtest.NewProxy(t, c.Endpoint(0))
			open := func() *Backend {
				return f.open(func(cfg *Config) { cfg.Endpoints, cfg.RequestTimeout = []string{p.URL()}, timeout })
			}
			var b *Backend
			switch link {
			case "cut-connected":
				b = open()
				connected(t, b)
				p.Blackhole()
			case "cut-fresh":
				p.Blackhole()
				b = open()
			case "slow":
				b = open()
				connected(t, b)
				p.Slow(timeout)
			}
			for _, st := range steps {
				began := time.Now()
				got, wrong := st.run(t, b)
				took := time.Since(began)
				t.Logf("%s: %d ms: %s", st.name, took.Milliseconds(), got)
				if wrong != "" {
					t.Errorf("%s on a %s link: %s: %s", st.name, link, wrong, got)
				}
				if took > 3*timeout {
					t.Errorf("%s on a %s link took %v, with a request timeout of %v", st.name, link, took, timeout)
				}
			}
			p.Heal()
			f.holds(store.Key("github", "network", "live"), "one", 1)
		})
	}
}

// A worker given every member, one of which takes connections and
// answers nothing (a blackhole, not a refusal: its connection stays
// ready): a resolve is answered by the others, within the request
// timeout. etcd's client sends each request to the next member in turn,
// and every third resolve waited out the whole timeout on the silent one
// and was store-unavailable, a cold start, for as long as gRPC kept the
// connection (its keepalive notices after 13 s).
func TestOneSilentMemberOfThreeFailsNoResolve(t *testing.T) {
	c := etcdtest.Start3(t)
	f := newFixture(t, c)
	key := store.Key("github", "network", "one-of-three")
	f.run(key, "one")
	var eps []string
	var ps []*etcdtest.Proxy
	for i := range 3 {
		p := etcdtest.NewProxy(t, c.Endpoint(i))
		ps, eps = append(ps, p), append(eps, p.URL())
	}
	const timeout = 600 * time.Millisecond
	b := f.open(func(cfg *Config) { cfg.Endpoints, cfg.RequestTimeout = eps, timeout })
	s := store.NewOn(b, store.Options{Bounds: gates.Bounds{TTL: 14 * 24 * time.Hour}})
	for range 6 { // every member's connection ready
		resolveOn(t, s, key)
	}
	ps[0].Blackhole()
	var slowest time.Duration
	for i := range 9 {
		began := time.Now()
		sess, _ := resolveOn(t, s, key)
		took := time.Since(began)
		slowest = max(slowest, took)
		if !sess.Resume || sess.Gen() != 1 {
			t.Errorf("resolve %d with one member of three silent: %s after %v, want resumed", i, sess.Reason, took)
		}
	}
	t.Logf("9 resolves with one member of three silent: the slowest %v", slowest)
	if slowest >= timeout {
		t.Errorf("a resolve took %v, the request timeout", slowest)
	}
}
