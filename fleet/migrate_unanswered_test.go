package fleet

import (
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"sessdb/fleet/etcdmeta"
	"sessdb/internal/etcdtest"
	"sessdb/internal/faults"
	"sessdb/migrate"
	"sessdb/store"
)

// A create whose answer never came is unsure whatever the error it ends
// with. Over TLS, a request that ran out of time is followed by a
// handshake of sessdb's own, to tell refused credentials from silence;
// a refusal there (the client certificate expired or was replaced
// meanwhile: a rotation during a long migration) makes the error ErrAuth.
// The create had been served all the same: its record names the file the
// key's migration wrote, which must be kept. Removed, the key resolved
// transcript-replaced on the fleet, and a re-run reported it already.
func TestAMigrationsUnansweredCreateRefusedAtTheProbeKeepsItsFile(t *testing.T) {
	f, b, refuseAfter, landed, restore := refusedAtTheProbe(t)
	key := store.Key("github", "unanswered", "probe")
	root := promotedOnHost(t, key, "a")
	faults.Set(func(pt faults.Point) error {
		if pt == faults.ToEtcdWritten {
			refuseAfter(func() bool { return f.recordFile(key) != "" })
		}
		return nil
	})
	t.Cleanup(func() { faults.Set(nil) })
	got, _ := runMigration(t, true, root, b, MigrateOptions{})
	faults.Set(nil)
	if !landed() {
		t.Fatalf("the create never landed (%+v): this test proves nothing", got[key])
	}
	r := got[key]
	if r.Action != migrate.Failed || !strings.Contains(r.Cause, etcdmeta.ErrAuth.Error()) {
		t.Fatalf("the create refused at the probe: %s (%s); want failed, the credentials refused", r.Action, r.Cause)
	}
	restore()
	if files, rec := f.files(key), f.recordFile(key); len(files) != 1 || files[0] != rec {
		t.Errorf("the record the create landed names %s; the key's files are %v", rec, files)
	}
	if again, _ := runMigration(t, true, root, f.b, MigrateOptions{}); again[key].Action != migrate.Already {
		t.Errorf("a re-run: %s (%s), want already", again[key].Action, again[key].Cause)
	}
	sess, _ := resolveOn(t, f.s, key)
	if !sess.Resume {
		t.Fatalf("the migrated key resolves %s on the fleet: its file was removed under the record that names it", sess.Reason)
	}
	f.holds(key, "a", 1)
}

// The same for a promotion's commit: refused at the probe after its
// answer never came, the promotion is promote-failed, but the commit had
// landed, and its file is the key's generation. Removed (the commit taken
// for one that never went out), the key resolved transcript-replaced:
// the conversation it held before lost to every later job.
func TestAnUnansweredCommitRefusedAtTheProbeKeepsItsFile(t *testing.T) {
	etcdtest.Beside(t)
	f, b, refuseAfter, landed, restore := refusedAtTheProbe(t)
	key := store.Key("github", "unanswered", "commit")
	f.run(key, "a")
	s := store.NewOn(b, store.Options{})
	sess, jobDir := resolveOn(t, s, key)
	appendMarker(t, jobDir, "b")
	b.hook = func(point, k string) error {
		if point == hookCommit && k == key {
			refuseAfter(func() bool { return strings.Contains(f.recordFile(key), "/0000000000000002-") })
		}
		return nil
	}
	res, err := s.Promote(sess, store.PromoteRequest{PiVersion: testJob.PiVersion})
	b.hook = nil
	if !landed() {
		t.Fatalf("the commit never landed (%+v, %v): this test proves nothing", res, err)
	}
	if res.Promoted || !errors.Is(err, etcdmeta.ErrAuth) {
		t.Fatalf("the commit refused at the probe: %+v, %v; want promote-failed, the credentials refused", res, err)
	}
	restore()
	if rec := f.recordFile(key); !slices.Contains(f.files(key), rec) {
		t.Errorf("the record the commit landed names %s; the key's files are %v", rec, f.files(key))
	}
	sess2, _ := resolveOn(t, f.s, key)
	if !sess2.Resume {
		t.Fatalf("the key resolves %s: the file of the commit that landed was removed under its record", sess2.Reason)
	}
}

// The same for a reap's delete: refused at the probe after its answer
// never came, the key is skipped with the credentials refused, and its
// error must say the key may be removed already, as after any lost
// answer: the walk reports no removal for it, and the error is all the
// operator hears. It said only that etcd refused the credentials, the key
// gone.
func TestAnUnansweredDeleteRefusedAtTheProbeSaysTheKeyMayBeGone(t *testing.T) {
	etcdtest.Beside(t)
	f, b, refuseAfter, landed, restore := refusedAtTheProbe(t)
	key := store.Key("github", "unanswered", "delete")
	f.now = time.Now().Add(-30 * 24 * time.Hour)
	f.run(key, "old")
	f.now = time.Time{}
	b.hook = func(point, k string) error {
		if point == hookReapDelete && k == key {
			refuseAfter(func() bool { return f.recordFile(key) == "" })
		}
		return nil
	}
	r, err := b.Reap(t.Context(), ReapOptions{TTL: 14 * 24 * time.Hour})
	b.hook = nil
	if !landed() {
		t.Fatalf("the delete never landed (%+v, %v): this test proves nothing", r, err)
	}
	restore()
	if kerr := r.Skipped[key]; err != nil || !errors.Is(kerr, etcdmeta.ErrAuth) || !strings.Contains(kerr.Error(), "may be removed already") {
		t.Errorf("reap: %v, the key skipped with %v; want the credentials refused, and the key named as maybe removed already", err, kerr)
	}
}

// refusedAtTheProbe is a fleet on one TLS member with authentication, a
// Backend on it through a proxy (1.5 s request timeout), and refuseAfter,
// which a test calls just before a write: the write is served and its
// answer held; once done() says it landed, the connections made from then
// on (the TLS probe's) are served, with a client certificate the member
// refuses (expired). landed, once the write has returned, reports whether
// it landed (false too if refuseAfter was never called).
// restore puts the good certificate back.
func refusedAtTheProbe(t *testing.T) (f *fixture, b *Backend, refuseAfter func(done func() bool), landed func() bool, restore func()) {
	c := etcdtest.StartSecure(t, 1)
	dir := t.TempDir()
	certFile, keyFile := dir+"/client.pem", dir+"/client-key.pem"
	put := func(cert, key string) {
		t.Helper()
		for from, to := range map[string]string{cert: certFile, key: keyFile} {
			data, err := os.ReadFile(from)
			if err == nil {
				err = os.WriteFile(to+".tmp", data, 0o600)
			}
			if err == nil {
				err = os.Rename(to+".tmp", to)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	put(c.CertFile, c.KeyFile)
	expiredCert, expiredKey := c.CA.IssueExpired(t, t.TempDir(), etcdtest.User)
	secure := func(cfg *Config) {
		cfg.CAFile, cfg.CertFile, cfg.KeyFile = c.CAFile, certFile, keyFile
		cfg.Username, cfg.Password = etcdtest.User, etcdtest.Password
		cfg.DialTimeout, cfg.RequestTimeout = 10*time.Second, 10*time.Second
	}
	f = &fixture{t: t, c: c, prefix: "/sessdb/" + randHex(8), dir: t.TempDir()}
	f.b = f.open(secure)
	f.s = store.NewOn(f.b, store.Options{Now: f.clock})
	p := etcdtest.NewProxy(t, c.Endpoint(0))
	reached, result := make(chan struct{}), make(chan bool, 1)
	landed = func() bool {
		select {
		case <-reached:
			return <-result
		default:
			return false // never held
		}
	}
	b = f.open(secure, func(cfg *Config) {
		cfg.Endpoints = []string{strings.Replace(p.URL(), "http://", "https://", 1)}
		cfg.RequestTimeout = 1500 * time.Millisecond
	})
	connected(t, b)
	refuseAfter = func(done func() bool) {
		close(reached)
		p.BlackholeAnswers()
		put(expiredCert, expiredKey)
		go func() {
			for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
				if done() {
					p.HealStale()
					result <- true
					return
				}
				if time.Now().After(deadline) {
					p.Heal()
					result <- false
					return
				}
			}
		}()
	}
	return f, b, refuseAfter, landed, func() { put(c.CertFile, c.KeyFile) }
}
