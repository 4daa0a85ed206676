package fleet

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"sessdb/fleet/etcdmeta"
	"sessdb/gates"
	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// A fleet on a cluster with client and peer TLS and etcd's authentication
// resolves and promotes as its user. A client with the wrong credentials
// gets nothing: no verdict, no bytes, no ticket, no write.
func TestTLSAndAuth(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.StartSecure(t, 1)
	secure := func(cfg *Config) {
		cfg.CAFile, cfg.CertFile, cfg.KeyFile = c.CAFile, c.CertFile, c.KeyFile
		cfg.Username, cfg.Password = etcdtest.User, etcdtest.Password
		cfg.DialTimeout, cfg.RequestTimeout = 10*time.Second, 10*time.Second
	}
	f := &fixture{t: t, c: c, prefix: "/sessdb/" + randHex(8), dir: t.TempDir()}
	f.b = f.open(secure)
	f.s = store.NewOn(f.b, store.Options{})
	key := store.Key("github", "secure", "x")
	f.run(key, "one")
	f.run(key, "two")
	f.holds(key, "two", 2)
	if _, err := f.b.Reap(t.Context(), ReapOptions{TTL: time.Hour}); err != nil {
		t.Fatalf("reap as the user (its lock included): %v", err)
	}
	before, _ := f.b.meta.Get(t.Context(), key)
	sess, _ := f.job(key, "three")

	rogue := etcdtest.NewCA(t, t.TempDir(), "rogue CA")
	rogueCert, rogueKey := rogue.Issue(t, t.TempDir(), etcdtest.User, false)
	for name, tc := range map[string]struct {
		edit func(*Config)
		// promoted is what a promote of the fleet's ticket gets: a
		// refusal by etcd, or, from another prefix, by the store itself
		// (another fleet's ticket), before etcd is asked.
		promoted error
	}{
		"a wrong password": {func(c *Config) { c.Password = "guess" }, etcdmeta.ErrAuth},
		"a certificate of another CA, no password": {func(c *Config) {
			c.CertFile, c.KeyFile, c.Username, c.Password = rogueCert, rogueKey, "", ""
		}, etcdmeta.ErrAuth},
		"a prefix outside the user's role": {func(c *Config) { c.Prefix = "/elsewhere" }, store.ErrWrongRoot},
	} {
		t.Run(name, func(t *testing.T) {
			cfg := Config{Config: etcdmeta.Config{Endpoints: c.Endpoints(), Prefix: f.prefix}, TranscriptsDir: f.dir}
			secure(&cfg)
			cfg.DialTimeout, cfg.RequestTimeout = 3*time.Second, 1500*time.Millisecond
			tc.edit(&cfg)
			b, err := Open(cfg)
			if err != nil {
				if !errors.Is(err, etcdmeta.ErrAuth) {
					t.Fatalf("Open = %v, want ErrAuth", err)
				}
				return // refused at the login: nothing to use
			}
			defer b.Close()
			s := store.NewOn(b, store.Options{})
			jobDir := t.TempDir()
			got, err := s.Resolve(key, testJob, jobDir)
			if !errors.Is(err, etcdmeta.ErrAuth) || got.Resume {
				t.Fatalf("Resolve = %+v, %v; want ErrAuth, a fault", got, err)
			}
			if ents, _ := os.ReadDir(jobDir); len(ents) != 1 || ents[0].Name() != store.StagedDirName {
				t.Fatalf("the job dir holds %v: a ticket or a file was left", ents)
			}
			if ents, _ := os.ReadDir(filepath.Join(jobDir, store.StagedDirName)); len(ents) != 0 {
				t.Fatalf("something was staged: %v", ents)
			}
			res, err := s.Promote(sess, store.PromoteRequest{PiVersion: testJob.PiVersion})
			if !errors.Is(err, tc.promoted) || res.Promoted {
				t.Fatalf("Promote = %+v, %v; want %v", res, err, tc.promoted)
			}
			if tc.promoted == etcdmeta.ErrAuth && res.Reason != gates.PromoteFailed {
				t.Fatalf("Promote = %+v, want promote-failed", res)
			}
		})
	}
	after, _ := f.b.meta.Get(t.Context(), key)
	if !reflect.DeepEqual(after.Record, before.Record) || after.Rev != before.Rev || len(after.History) != len(before.History) {
		t.Fatal("a refused client changed the key")
	}
	if res, err := f.promote(sess); err != nil || !res.Promoted || res.Gen != 3 {
		t.Fatalf("the user's own promote after the refusals: %+v, %v", res, err)
	}
}
