package main

import (
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// testFleet is a fleet on one real etcd member, for the CLI's tests: its
// connection is in the environment, as a worker's would be.
type testFleet struct {
	c      *etcdtest.Cluster
	dir    string // the transcripts dir
	prefix string
	jobs   string // where its jobs' dirs go
}

// startFleet starts a member and points the environment at a fleet on it.
func startFleet(t *testing.T) *testFleet {
	t.Helper()
	return fleetOn(t, etcdtest.Start1(t))
}

func fleetOn(t *testing.T, c *etcdtest.Cluster) *testFleet {
	t.Helper()
	clearEnv(t)
	f := &testFleet{c: c, dir: filepath.Join(t.TempDir(), "transcripts"), prefix: "/sessdb/cli", jobs: t.TempDir()}
	if err := os.Mkdir(f.dir, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PI_SESSIONS_ETCD_ENDPOINTS", strings.Join(c.Endpoints(), ","))
	t.Setenv("PI_SESSIONS_TRANSCRIPTS_DIR", f.dir)
	t.Setenv("PI_SESSIONS_ETCD_PREFIX", f.prefix)
	return f
}

// resolve resolves key for the job named job, with extra arguments, and
// returns what it printed and the job's dir; it must exit 0.
func (f *testFleet) resolve(t *testing.T, key, job string, extra ...string) (resolveOutput, string) {
	t.Helper()
	dir := filepath.Join(f.jobs, job)
	args := append([]string{"resolve", "--key", key, "--job-dir", dir, "--pi-version", "0.58.3", "--venue", "local", "--job", job}, extra...)
	code, out, errs := runCLI(t, args...)
	var r resolveOutput
	if code != exitOK || json.Unmarshal([]byte(out), &r) != nil {
		t.Fatalf("resolve %s: exit %d\n%s%s", job, code, out, errs)
	}
	return r, dir
}

// promote promotes the job in dir and returns what it printed and its
// stderr; it must exit 0, as every promote outcome does.
func (f *testFleet) promote(t *testing.T, dir string, extra ...string) (promoteResult, string) {
	t.Helper()
	code, out, errs := runCLI(t, append([]string{"promote", "--job-dir", dir, "--pi-version", "0.58.3"}, extra...)...)
	var p promoteResult
	if code != exitOK || json.Unmarshal([]byte(out), &p) != nil {
		t.Fatalf("promote %s: exit %d\n%s%s", dir, code, out, errs)
	}
	return p, errs
}

// run resolves key, appends an answered turn and promotes it, and
// returns the promotion's result.
func (f *testFleet) run(t *testing.T, key, job string) promoteResult {
	t.Helper()
	_, dir := f.resolve(t, key, job)
	appendAnswered(t, dir, job)
	p, errs := f.promote(t, dir)
	if !p.Promoted {
		t.Fatalf("promote %s: %+v\n%s", job, p, errs)
	}
	return p
}

// The job contract through the CLI on a fleet: a cold start, its
// promotion, a resume of exactly those bytes, a second generation, a
// retry that repeats, a rival superseded; no sessions root anywhere.
func TestFleetResolvePromoteRoundTrip(t *testing.T) {
	f := startFleet(t)
	key := store.Key("github", "acme/widget", "pi/fleet-1")
	r, a := f.resolve(t, key, "job-a")
	if r.Resume || r.Reason != "absent" || r.Bytes != 0 {
		t.Fatalf("first resolve = %+v, want a cold start, absent", r)
	}
	appendAnswered(t, a, "a")
	p, _ := f.promote(t, a, "--require", "answered")
	if !p.Promoted || p.Gen != 1 || p.Run != "answered" {
		t.Fatalf("first promote = %+v", p)
	}
	want, _ := os.ReadFile(filepath.Join(a, store.StagedDirName, store.TranscriptName))

	r, b := f.resolve(t, key, "job-b")
	_, c := f.resolve(t, key, "job-c")
	got, _ := os.ReadFile(r.Staged)
	if !r.Resume || r.Reason != "resumed" || r.Bytes != int64(len(want)) || string(got) != string(want) {
		t.Fatalf("second resolve = %+v, staged %d bytes; want the %d bytes promoted", r, len(got), len(want))
	}
	appendAnswered(t, b, "b")
	if p, _ = f.promote(t, b); !p.Promoted || p.Gen != 2 {
		t.Fatalf("job-b = %+v, want gen 2", p)
	}
	if p, _ = f.promote(t, b); !p.Promoted || !p.Repeat || p.Gen != 2 {
		t.Fatalf("job-b again = %+v, want the first result repeated", p)
	}
	appendAnswered(t, c, "c")
	if p, _ = f.promote(t, c); p.Promoted || p.Reason != "superseded" || p.SupersededBy != 2 {
		t.Fatalf("job-c = %+v, want superseded by gen 2", p)
	}
	// The generation files are in the transcripts dir, and nothing was
	// made anywhere else.
	files, _ := filepath.Glob(filepath.Join(f.dir, key, "*.jsonl"))
	if len(files) != 2 {
		t.Fatalf("transcripts dir holds %v, want gens 1 and 2", files)
	}
	code, out, errs := runCLI(t, "dump", "--json", "--key", key)
	if code != exitOK || !strings.Contains(out, `"gen":2`) || !strings.Contains(out, `"layout":"etcd"`) || !strings.Contains(out, `"if_matched":"resumed"`) {
		t.Fatalf("dump: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs = runCLI(t, "dump", "--json", "--key", store.Key("github", "acme/widget", "pi/none"))
	if code != exitOK || !strings.Contains(out, `"problem":"no record"`) || !strings.Contains(out, `"verdict":{"reason":"absent"`) {
		t.Fatalf("dump of a key with no record: exit %d\n%s%s", code, out, errs)
	}
}

// A ticket from a sessions root promoted on a fleet, and one from the
// fleet on a sessions root, is refused before anything is written: exit 2,
// naming both stores.
func TestFleetRefusesAnotherStoresTicket(t *testing.T) {
	f := startFleet(t)
	key := store.Key("github", "acme/widget", "pi/elsewhere")
	_, onFleet := f.resolve(t, key, "on-fleet")
	appendAnswered(t, onFleet, "x")
	root := t.TempDir()
	clearEnv(t)
	code, out, errs := runCLI(t, "promote", "--job-dir", onFleet, "--pi-version", "0.58.3", "--sessions-dir", root)
	if code != exitUsage || out != "" || !strings.Contains(errs, "etcd prefix "+f.prefix) || !strings.Contains(errs, root) {
		t.Errorf("the fleet's ticket on a sessions root: exit %d, %q %q", code, out, errs)
	}
	job := filepath.Join(t.TempDir(), "job")
	if code, out, errs := runCLI(t, "resolve", "--sessions-dir", root, "--key", key, "--job-dir", job, "--pi-version", "0.58.3"); code != exitOK {
		t.Fatalf("resolve on the root: exit %d %s%s", code, out, errs)
	}
	appendAnswered(t, job, "y")
	code, out, errs = runCLI(t, "promote", "--job-dir", job, "--pi-version", "0.58.3", "--etcd-endpoints", strings.Join(f.c.Endpoints(), ","), "--transcripts-dir", f.dir, "--etcd-prefix", f.prefix)
	if code != exitUsage || out != "" || !strings.Contains(errs, root) {
		t.Errorf("a sessions root's ticket on the fleet: exit %d, %q %q", code, out, errs)
	}
	if files, _ := filepath.Glob(filepath.Join(f.dir, key, "*")); len(files) != 0 {
		t.Errorf("the refused promote wrote %v", files)
	}
}

// closedPort is a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// A resolve that cannot reach etcd is the named cold start
// store-unavailable, exit 0, with a 0-byte staged file and a ticket, in
// about the request timeout; with a user name (a login at the open) too.
// The promote of such a job is promote-failed, its cause on stderr.
func TestFleetStoreUnavailable(t *testing.T) {
	clearEnv(t)
	dir := t.TempDir()
	t.Setenv("PI_SESSIONS_ETCD_ENDPOINTS", "http://"+closedPort(t))
	t.Setenv("PI_SESSIONS_TRANSCRIPTS_DIR", dir)
	key := store.Key("github", "acme/widget", "pi/unavailable")
	for name, extra := range map[string][]string{
		"no login": nil,
		"a login":  {"--etcd-user", "sessdb"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Setenv("PI_SESSIONS_ETCD_PASSWORD", "")
			if extra != nil {
				t.Setenv("PI_SESSIONS_ETCD_PASSWORD", "secret")
			}
			job := filepath.Join(t.TempDir(), "job")
			start := time.Now()
			code, out, errs := runCLI(t, append([]string{"resolve", "--key", key, "--job-dir", job, "--pi-version", "0.58.3", "--etcd-timeout", "300ms"}, extra...)...)
			took := time.Since(start)
			var r resolveOutput
			if code != exitOK || json.Unmarshal([]byte(out), &r) != nil || r.Resume || r.Reason != "store-unavailable" || r.Bytes != 0 {
				t.Fatalf("resolve: exit %d\n%s%s", code, out, errs)
			}
			// Not a speed target: a bound that only a hang would cross.
			if took > 20*time.Second {
				t.Errorf("resolve took %v with a 300ms request timeout", took)
			}
			if fi, err := os.Stat(r.Staged); err != nil || fi.Size() != 0 {
				t.Errorf("staged %v, %v; want a 0-byte file", fi, err)
			}
			appendAnswered(t, job, "unavailable")
			code, out, errs = runCLI(t, append([]string{"promote", "--job-dir", job, "--pi-version", "0.58.3", "--etcd-timeout", "300ms"}, extra...)...)
			var p promoteResult
			if code != exitOK || json.Unmarshal([]byte(out), &p) != nil || p.Promoted || p.Reason != "promote-failed" || !strings.Contains(errs, "etcd unavailable") {
				t.Fatalf("promote: exit %d\n%s%s", code, out, errs)
			}
		})
	}
}

// etcd gone between a resolve and its promote: promote-failed (exit 0),
// the cause on stderr, the job's transcript where it was; once etcd is
// back, the same ticket promotes.
func TestFleetPromoteFailedWhenEtcdGone(t *testing.T) {
	f := startFleet(t)
	key := store.Key("github", "acme/widget", "pi/gone")
	f.run(t, key, "first")
	_, dir := f.resolve(t, key, "second")
	appendAnswered(t, dir, "second")
	staged, _ := os.ReadFile(filepath.Join(dir, store.StagedDirName, store.TranscriptName))
	f.c.Stop(0)
	p, errs := f.promote(t, dir, "--etcd-timeout", "500ms")
	if p.Promoted || p.Reason != "promote-failed" || p.Gen != 0 || !strings.Contains(errs, "etcd unavailable") {
		t.Fatalf("promote with etcd stopped = %+v\n%s", p, errs)
	}
	if now, _ := os.ReadFile(filepath.Join(dir, store.StagedDirName, store.TranscriptName)); string(now) != string(staged) {
		t.Fatal("the job's transcript changed")
	}
	f.c.Restart(0)
	if p, errs = f.promote(t, dir); !p.Promoted || p.Gen != 2 {
		t.Fatalf("promote after the restart = %+v\n%s", p, errs)
	}
}

// TLS and etcd's authentication through the flags: the fleet's user
// resolves and promotes with its password from a file or the
// environment; wrong credentials get nothing: no verdict, no staged file,
// no ticket, and the key unchanged.
func TestFleetTLSAndAuth(t *testing.T) {
	c := etcdtest.StartSecure(t, 1)
	f := fleetOn(t, c)
	secret := filepath.Join(t.TempDir(), "password")
	os.WriteFile(secret, []byte(etcdtest.Password+"\n"), 0o600)
	tlsWith := func(cert, key, timeout string) []string {
		return []string{"--etcd-endpoints", strings.Replace(c.Endpoint(0), "http://", "https://", 1), "--etcd-ca", c.CAFile, "--etcd-cert", cert, "--etcd-key", key, "--etcd-user", etcdtest.User, "--etcd-timeout", timeout}
	}
	tlsFlags := tlsWith(c.CertFile, c.KeyFile, "10s")
	t.Setenv("PI_SESSIONS_ETCD_ENDPOINTS", "")
	key := store.Key("github", "acme/widget", "pi/secure")

	// The password from a file, then from the environment.
	_, a := f.resolve(t, key, "a", append(tlsFlags, "--etcd-password-file", secret)...)
	appendAnswered(t, a, "a")
	if p, errs := f.promote(t, a, append(tlsFlags, "--etcd-password-file", secret)...); !p.Promoted || p.Gen != 1 {
		t.Fatalf("promote as the user = %+v\n%s", p, errs)
	}
	t.Setenv("PI_SESSIONS_ETCD_PASSWORD", etcdtest.Password)
	r, b := f.resolve(t, key, "b", tlsFlags...)
	if !r.Resume {
		t.Fatalf("resolve as the user, password from the environment = %+v", r)
	}
	appendAnswered(t, b, "b")
	_, before, _ := runCLI(t, append([]string{"dump", "--json", "--history", "64"}, tlsFlags...)...)

	rogue := etcdtest.NewCA(t, t.TempDir(), "rogue CA")
	rogueCert, rogueKey := rogue.Issue(t, t.TempDir(), etcdtest.User, false)
	// A refused TLS handshake shows only as the request's deadline
	// (etcdmeta then probes it): a short one keeps the test short.
	// Each refusal's stderr names its cause.
	plainURL := strings.Replace(c.Endpoint(0), "https://", "http://", 1)
	// A refusal of the credentials names the settings they came from
	// (before, none: "etcd refused the credentials: authentication
	// failed"), never a value.
	const named = "(the user from --etcd-user, its password from PI_SESSIONS_ETCD_PASSWORD"
	for name, refusal := range map[string]struct {
		edit  func() []string
		cause string
	}{
		"a wrong password": {func() []string {
			t.Setenv("PI_SESSIONS_ETCD_PASSWORD", "guess")
			return tlsWith(c.CertFile, c.KeyFile, "1500ms")
		}, "authentication failed"},
		"a certificate of another CA": {func() []string {
			t.Setenv("PI_SESSIONS_ETCD_PASSWORD", etcdtest.Password)
			return tlsWith(rogueCert, rogueKey, "1500ms")
		}, "certificate"},
		// The login, over a plain connection the member cannot read,
		// went unanswered: "etcd unavailable" at every command, a resolve
		// a cold start, where the setting is what to fix.
		"an http:// endpoint of the TLS member": {func() []string {
			t.Setenv("PI_SESSIONS_ETCD_PASSWORD", etcdtest.Password)
			return []string{"--etcd-endpoints", plainURL, "--etcd-user", etcdtest.User, "--etcd-timeout", "1500ms"}
		}, plainURL + ": the member serves TLS, not plain HTTP"},
	} {
		t.Run(name, func(t *testing.T) {
			flags := refusal.edit()
			named := named + ")"
			if slices.Contains(flags, "--etcd-cert") {
				named = strings.TrimSuffix(named, ")") + ", the client certificate from --etcd-cert)"
			}
			job := filepath.Join(t.TempDir(), "job")
			code, out, errs := runCLI(t, append([]string{"resolve", "--key", key, "--job-dir", job, "--pi-version", "0.58.3"}, flags...)...)
			if code != exitFault || out != "" || !strings.Contains(errs, "refused the credentials") || !strings.Contains(errs, refusal.cause) || strings.Count(errs, "\n") != 1 {
				t.Fatalf("resolve: exit %d, stdout %q, stderr %q; want exit 1, refused for %q, said once", code, out, errs, refusal.cause)
			}
			if strings.Contains(errs, "refused the credentials") && (!strings.Contains(errs, named) || strings.Contains(errs, "guess")) {
				t.Errorf("resolve's stderr %q names not the settings %s, or a value", errs, named)
			}
			if _, err := os.Stat(filepath.Join(job, store.TicketName)); err == nil {
				t.Error("a ticket was left")
			}
			if ents, _ := os.ReadDir(filepath.Join(job, store.StagedDirName)); len(ents) != 0 {
				t.Errorf("something was staged: %v", ents)
			}
			code, out, errs = runCLI(t, append([]string{"promote", "--job-dir", b, "--pi-version", "0.58.3"}, flags...)...)
			var p promoteResult
			if code != exitOK || json.Unmarshal([]byte(out), &p) != nil || p.Promoted || p.Reason != "promote-failed" || !strings.Contains(errs, "refused the credentials") || !strings.Contains(errs, refusal.cause) || strings.Count(errs, "\n") != 1 {
				t.Fatalf("promote: exit %d\n%s%s", code, out, errs)
			}
			if !strings.Contains(errs, named) {
				t.Errorf("promote's stderr %q names not the settings %s", errs, named)
			}
			if code, out, errs := runCLI(t, append([]string{"dump", "--json"}, flags...)...); code != exitFault || out != "" || !strings.Contains(errs, refusal.cause) || strings.Contains(errs, "refused the credentials") && !strings.Contains(errs, named) {
				t.Errorf("dump: exit %d, stdout %q, stderr %q; want exit 1, nothing, and the cause", code, out, errs)
			}
		})
	}
	t.Setenv("PI_SESSIONS_ETCD_PASSWORD", etcdtest.Password)
	if code, after, errs := runCLI(t, append([]string{"dump", "--json", "--history", "64"}, tlsFlags...)...); code != exitOK || after != before {
		t.Fatalf("a refused client changed the key: exit %d\n--- before\n%s--- after\n%s%s", code, before, after, errs)
	}
	if p, errs := f.promote(t, b, tlsFlags...); !p.Promoted || p.Gen != 2 {
		t.Fatalf("the user's own promote after the refusals = %+v\n%s", p, errs)
	}
}

// A fleet's login that etcd does not answer is reported once (issue 12:
// "each failure is reported once"): the login's warning came before every
// job command's own report of the same cause, so a promote logged it
// twice, and a resolve refused its credentials twice. The endpoint is one
// nothing listens on; a user name makes the commands log in.
func TestAFleetLoginFailureIsReportedOnce(t *testing.T) {
	clearEnv(t)
	dir := filepath.Join(t.TempDir(), "transcripts")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PI_SESSIONS_ETCD_ENDPOINTS", "http://127.0.0.1:9")
	t.Setenv("PI_SESSIONS_TRANSCRIPTS_DIR", dir)
	t.Setenv("PI_SESSIONS_ETCD_USER", "sessdb")
	t.Setenv("PI_SESSIONS_ETCD_PASSWORD", "secret")
	t.Setenv("PI_SESSIONS_ETCD_TIMEOUT", "50ms")
	job := filepath.Join(t.TempDir(), "job")
	code, out, errs := runCLI(t, "resolve", "--key", store.Key("github", "acme/widget", "pi/once"), "--job-dir", job, "--pi-version", "0.58.3")
	var r struct{ Reason string }
	if code != exitOK || json.Unmarshal([]byte(out), &r) != nil || r.Reason != "store-unavailable" || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, "etcd unavailable") {
		t.Fatalf("resolve: exit %d, stdout %q, stderr %q; want store-unavailable and its cause in one line", code, out, errs)
	}
	appendAnswered(t, job, "once")
	code, out, errs = runCLI(t, "promote", "--job-dir", job, "--pi-version", "0.58.3")
	var p promoteResult
	if code != exitOK || json.Unmarshal([]byte(out), &p) != nil || p.Reason != "promote-failed" || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, "etcd unavailable") {
		t.Fatalf("promote: exit %d, stdout %q, stderr %q; want promote-failed and its cause in one line", code, out, errs)
	}
}

// A fleet walk whose login fails is a fault, not a walk stopped: the
// error on stderr, exit 1, and no summary on stdout that says 0 entries.
func TestAFleetWalkWhoseLoginFailsIsAFault(t *testing.T) {
	clearEnv(t)
	base := t.TempDir()
	dir, root := filepath.Join(base, "transcripts"), filepath.Join(base, "sessions")
	for _, d := range []string{dir, root} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PI_SESSIONS_ETCD_ENDPOINTS", "http://127.0.0.1:9")
	t.Setenv("PI_SESSIONS_TRANSCRIPTS_DIR", dir)
	t.Setenv("PI_SESSIONS_ETCD_USER", "sessdb")
	t.Setenv("PI_SESSIONS_ETCD_PASSWORD", "secret")
	t.Setenv("PI_SESSIONS_ETCD_TIMEOUT", "50ms")
	for _, args := range [][]string{
		{"dump", "--json"},
		{"check", "--json"},
		{"reap", "--json"},
		{"stats", "--json"},
		{"migrate", "--json", "--to", "etcd", root},
	} {
		code, out, errs := runCLI(t, args...)
		if code != exitFault || out != "" || !strings.Contains(errs, "etcd unavailable") {
			t.Errorf("%s with a login that fails: exit %d, stdout %q, stderr %q; want exit %d, nothing on stdout, the cause on stderr", args[0], code, out, errs, exitFault)
		}
	}
}
