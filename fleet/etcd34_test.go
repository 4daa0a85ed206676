package fleet

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"sessdb/fleet/etcdmeta"
	"sessdb/gates"
	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// quorumResolves is how many resolves go through the member whose quorum
// is suspended: RELIABILITY §5o's manual run on etcd 3.4.23 saw 4 faults
// in 12 before 19791d7.
const quorumResolves = 12

// A member of a released etcd (SESSDB_ETCD_BINARY) whose two peers are
// suspended (SIGSTOP: a lost quorum, the peers' ports still open), each
// command given it alone as its endpoint and a short timeout, as
// docs/fleet.md's commands are. Every resolve is the named cold start
// store-unavailable, never a fault: an etcd 3.4 member times a
// linearizable read out itself and answers "context deadline exceeded"
// without a gRPC code (before 19791d7 a fault, exit 1, no ticket). A
// promote of a job resolved before is promote-failed, etcd unavailable,
// its transcript in its job dir. Continued, the key resumes, and the
// job's retry of the same ticket promotes: a repeat if its commit landed
// once the quorum was back (docs/fleet.md: "a commit whose answer was
// lost is recognised if it landed, and a retry with the same ticket
// repeats it"), a first promotion if it did not. The lone member is the
// leader (its heartbeats unanswered) or a follower (the leader it asks
// suspended).
func TestQuorumSuspendedOnExternalEtcd(t *testing.T) {
	bin := etcdtest.ExternalBinary(t)
	for _, lone := range []string{"leader", "follower"} {
		t.Run(lone, func(t *testing.T) {
			c := etcdtest.Start(t, etcdtest.Options{Members: 3, Binary: bin})
			f := newFixture(t, c)
			key := store.Key("github", "etcd34", "quorum-"+lone)
			f.run(key, "one")
			early, earlyDir := f.job(key, "two")

			keep := c.Leader()
			if lone == "follower" {
				keep = (keep + 1) % c.Size()
			}
			const timeout = time.Second
			// A command's own Backend: a fresh client of the one member,
			// as each sessdb command makes.
			command := func() *store.Store {
				b := f.open(func(cfg *Config) { cfg.Endpoints, cfg.RequestTimeout = []string{c.Endpoint(keep)}, timeout })
				return store.NewOn(b, store.Options{Bounds: gates.Bounds{TTL: 14 * 24 * time.Hour}})
			}
			for i := range c.Size() {
				if i != keep {
					c.Suspend(i) // returns once its threads have all stopped (Linux)
				}
			}
			suspended := time.Now()
			// peers says, for a fault's message, when the resolve began
			// after the suspension and whether the peers are still
			// stopped (RELIABILITY §9: once, 2 of 12 resumed).
			peers := func(began time.Time) string {
				var stopped []string
				for i := range c.Size() {
					if i != keep {
						stopped = append(stopped, fmt.Sprintf("member %d stopped %v", i, c.Stopped(i)))
					}
				}
				return fmt.Sprintf("began %v after the suspension; %s", began.Sub(suspended).Round(time.Millisecond), strings.Join(stopped, ", "))
			}
			var faults []string
			tally := map[string]int{}
			for n := range quorumResolves {
				began := time.Now()
				sess, jobDir, err := resolveErr(command(), key, t.TempDir())
				took := time.Since(began).Round(time.Millisecond)
				switch {
				case err != nil:
					faults = append(faults, fmt.Sprintf("resolve %d: a fault after %v: %v (%s)", n, took, err, peers(began)))
					tally["fault"]++
				case sess.Resume || sess.Reason != gates.StoreUnavailable || sess.Base != (store.Base{}) || len(stagedOf(t, jobDir)) != 0:
					faults = append(faults, fmt.Sprintf("resolve %d: %s (resume %v, gen %d) after %v (%s)", n, sess.Reason, sess.Resume, sess.Gen(), took, peers(began)))
					tally[string(sess.Reason)]++
				default:
					tally[string(sess.Reason)]++
				}
			}
			t.Logf("%d resolves through the %s alone: %v", quorumResolves, lone, tally)
			if len(faults) > 0 {
				t.Errorf("%d of %d resolves through a member without its quorum are not store-unavailable:\n%s", len(faults), quorumResolves, strings.Join(faults, "\n"))
			}

			res, err := command().Promote(early, store.PromoteRequest{PiVersion: testJob.PiVersion})
			t.Logf("the promote through the %s alone: %s (%v)", lone, res.Reason, err)
			if res.Promoted || res.Reason != gates.PromoteFailed || !errors.Is(err, etcdmeta.ErrUnavailable) {
				t.Errorf("the promote through a member without its quorum = %+v, %v; want promote-failed, etcd unavailable", res, err)
			}
			if m := markers(stagedOf(t, earlyDir)); len(m) == 0 || m[len(m)-1] != "two" {
				t.Errorf("the job's transcript left its job dir: %v", m)
			}

			for i := range c.Size() {
				if i != keep {
					c.Continue(i)
				}
			}
			continued := time.Now()
			var gen uint64
			for {
				sess, jobDir := resolveOn(t, command(), key)
				if sess.Resume {
					m := markers(stagedOf(t, jobDir))
					gen = sess.Gen()
					// 1 as before, or 2 if the failed promote's commit
					// was proposed and committed once the quorum was back.
					if want := map[uint64]string{1: "one", 2: "two"}[gen]; want == "" || m[len(m)-1] != want {
						t.Fatalf("continued, the key resumes gen %d ending %v; want gen 1 ending one, or 2 ending two", gen, m)
					}
					break
				}
				if time.Since(continued) > 30*time.Second {
					t.Fatalf("the key is still %s 30 s after its members were continued", sess.Reason)
				}
			}
			t.Logf("continued: the key resumes gen %d after %v", gen, time.Since(continued))
			landed := gen == 2
			res, err = command().Promote(early, store.PromoteRequest{PiVersion: testJob.PiVersion})
			if err != nil || !res.Promoted || res.Gen != 2 || res.Repeat != landed {
				t.Fatalf("the retry of the same ticket = %+v, %v; want promoted at gen 2, repeat %v (the failed promote's commit landed: %v)", res, err, landed, landed)
			}
			f.holds(key, "two", 2)
		})
	}
}
