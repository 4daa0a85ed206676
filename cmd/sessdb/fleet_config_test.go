package main

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"sessdb/fleet"
	"sessdb/fleet/etcdmeta"
)

// fleetSecret is the password of the configuration tests: no error line
// may quote it.
const fleetSecret = "s3cret-never-printed"

// Every fleet flag and variable refuses what it cannot use, with exit 2,
// nothing on stdout and one line on stderr naming it (the flag when the
// flag gave the value, else the variable), before anything connects; and
// no line quotes the password.
func TestFleetConfigErrorsNameTheKnob(t *testing.T) {
	tmp := t.TempDir()
	dir := filepath.Join(tmp, "transcripts")
	os.Mkdir(dir, 0o700)
	file := filepath.Join(tmp, "file")
	os.WriteFile(file, []byte("x"), 0o600)
	junk := filepath.Join(tmp, "junk.pem")
	os.WriteFile(junk, []byte("not a certificate"), 0o600)
	empty := filepath.Join(tmp, "empty")
	os.WriteFile(empty, []byte("\nsecond line\n"), 0o600)
	huge := filepath.Join(tmp, "huge")
	os.WriteFile(huge, []byte(strings.Repeat("p", maxPasswordBytes+1)), 0o600)
	fifo := filepath.Join(tmp, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(tmp, "missing")
	anyones := filepath.Join(tmp, "anyones") // a transcripts dir no walk may descend
	os.Mkdir(anyones, 0o700)
	os.Chmod(anyones, 0o777)
	notUTF8 := filepath.Join(tmp, "tr\xffdir") // a directory, but no UTF-8 name
	os.Mkdir(notUTF8, 0o700)
	notUTF8Secret := filepath.Join(tmp, "latin1-password")
	os.WriteFile(notUTF8Secret, []byte(fleetSecret+"\xe9\n"), 0o600)
	ok := map[string]string{"PI_SESSIONS_ETCD_ENDPOINTS": "http://127.0.0.1:1", "PI_SESSIONS_TRANSCRIPTS_DIR": dir}
	tls := map[string]string{"PI_SESSIONS_ETCD_ENDPOINTS": "https://127.0.0.1:1", "PI_SESSIONS_TRANSCRIPTS_DIR": dir}
	with := func(base map[string]string, kv ...string) map[string]string {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	key := strings.Repeat("a", 32)
	resolve := []string{"resolve", "--key", key, "--job-dir", filepath.Join(tmp, "job"), "--pi-version", "1"}
	for _, c := range []struct {
		env  map[string]string
		args []string
		name string // the flag or variable the line must name
	}{
		{with(ok, "PI_SESSIONS_ETCD_ENDPOINTS", "127.0.0.1:2379"), resolve, "PI_SESSIONS_ETCD_ENDPOINTS"},
		{ok, append(resolve, "--etcd-endpoints", "http://a:1,ftp://b:2"), "--etcd-endpoints"},
		{ok, append(resolve, "--etcd-endpoints", "http://a:1,https://b:2"), "mixes https with http"},
		{with(ok, "PI_SESSIONS_ETCD_ENDPOINTS", "http://a:1,"), resolve, "PI_SESSIONS_ETCD_ENDPOINTS"},
		{with(ok, "PI_SESSIONS_ETCD_ENDPOINTS", "http://u:"+fleetSecret+"@a:1"), resolve, "PI_SESSIONS_ETCD_ENDPOINTS"},
		// Credentials in a URL that does not parse (a password with a
		// '/', a '%' or a '#', as a base64 one has; no scheme; a torn
		// host): never quoted whole either.
		{with(ok, "PI_SESSIONS_ETCD_ENDPOINTS", "http://u:"+fleetSecret+"/x@a:1"), resolve, "PI_SESSIONS_ETCD_ENDPOINTS"},
		{with(ok, "PI_SESSIONS_ETCD_ENDPOINTS", "http://a:1,http://u:"+fleetSecret+"%zz@b:1"), resolve, "PI_SESSIONS_ETCD_ENDPOINTS"},
		{ok, append(resolve, "--etcd-endpoints", "https://u:"+fleetSecret+"#x@a:1"), "--etcd-endpoints"},
		{ok, append(resolve, "--etcd-endpoints", "u:"+fleetSecret+"@a:1"), "--etcd-endpoints"},
		{ok, append(resolve, "--etcd-endpoints", "http://u:"+fleetSecret+"@[::1"), "--etcd-endpoints"},
		// A password with an '@' and then a '/', '?' or '#' parses, its
		// tail as the host and path; one with a ',' is split into two
		// endpoints, the first holding its head, with no '@' or with one
		// of the password's.
		{with(ok, "PI_SESSIONS_ETCD_ENDPOINTS", "http://u:p@"+fleetSecret+"/x@a:1"), resolve, "PI_SESSIONS_ETCD_ENDPOINTS"},
		{ok, append(resolve, "--etcd-endpoints", "http://a:1,https://u:p@"+fleetSecret+"?x@b:1"), "--etcd-endpoints"},
		{with(ok, "PI_SESSIONS_ETCD_ENDPOINTS", "http://u:"+fleetSecret+",x@a:1"), resolve, "PI_SESSIONS_ETCD_ENDPOINTS"},
		{ok, append(resolve, "--etcd-endpoints", "http://a:1,http://u:"+fleetSecret+",x,y@b:1"), "--etcd-endpoints"},
		{with(ok, "PI_SESSIONS_ETCD_ENDPOINTS", "http://u:p@"+fleetSecret+",x@a:1"), resolve, "PI_SESSIONS_ETCD_ENDPOINTS"},
		// A user name alone (a bearer token), or beside a password, is a
		// credential too.
		{with(ok, "PI_SESSIONS_ETCD_ENDPOINTS", "http://"+fleetSecret+"@a:1"), resolve, "PI_SESSIONS_ETCD_ENDPOINTS"},
		{ok, append(resolve, "--etcd-endpoints", "https://a:1,https://"+fleetSecret+":p@b:1"), "--etcd-endpoints"},
		{ok, append(resolve, "--etcd-endpoints", fleetSecret+"://x@a:1"), "--etcd-endpoints"},
		{with(ok, "PI_SESSIONS_ETCD_ENDPOINTS", "http://127.0.0.1:99999"), resolve, "PI_SESSIONS_ETCD_ENDPOINTS"},
		{with(ok, "PI_SESSIONS_ETCD_ENDPOINTS", "http://127.0.0.1:0"), resolve, "PI_SESSIONS_ETCD_ENDPOINTS"},
		// An unset $HOST in http://$HOST:2379: the client would dial this
		// machine's port.
		{with(ok, "PI_SESSIONS_ETCD_ENDPOINTS", "http://:2379"), resolve, "PI_SESSIONS_ETCD_ENDPOINTS"},
		// A ticket names these as JSON text, which cannot carry invalid
		// UTF-8: its promote would find another root.
		{with(ok, "PI_SESSIONS_ETCD_PREFIX", "/bad\xffutf8"), resolve, "PI_SESSIONS_ETCD_PREFIX"},
		{with(ok, "PI_SESSIONS_TRANSCRIPTS_DIR", notUTF8), resolve, "PI_SESSIONS_TRANSCRIPTS_DIR"},
		{nil, append(resolve, "--sessions-dir", tmp+"/\xff"), "--sessions-dir"},
		{nil, []string{"dump", tmp + "/\xff"}, "DIR argument"},
		{with(ok, "PI_SESSIONS_ETCD_PREFIX", "/"), resolve, "PI_SESSIONS_ETCD_PREFIX"},
		{ok, append(resolve, "--etcd-prefix", "/a\nb"), "--etcd-prefix"},
		// A prefix longer than a path: every job's ticket, which names
		// it, would be more than promote reads.
		{with(ok, "PI_SESSIONS_ETCD_PREFIX", "/"+strings.Repeat("p", 4096)), resolve, "PI_SESSIONS_ETCD_PREFIX"},
		{with(ok, "PI_SESSIONS_TRANSCRIPTS_DIR", ""), resolve, "--transcripts-dir"},
		{with(ok, "PI_SESSIONS_TRANSCRIPTS_DIR", missing), resolve, "PI_SESSIONS_TRANSCRIPTS_DIR"},
		{ok, append(resolve, "--transcripts-dir", file), "--transcripts-dir"},
		{with(ok, "PI_SESSIONS_TRANSCRIPTS_DIR", anyones), []string{"dump"}, "PI_SESSIONS_TRANSCRIPTS_DIR"},
		{ok, []string{"check", "--transcripts-dir", anyones}, "--transcripts-dir"},
		{ok, []string{"reap", "--transcripts-dir", "/"}, "--transcripts-dir"},
		{with(ok, "PI_SESSIONS_ETCD_CA", junk), resolve, "PI_SESSIONS_ETCD_CA"},
		// A scheme in capitals is the same scheme (the client lowers it).
		{ok, append(resolve, "--etcd-endpoints", "HTTP://a:1", "--etcd-ca", junk), "--etcd-ca"},
		{with(ok, "PI_SESSIONS_ETCD_ENDPOINTS", "Http://a:1", "PI_SESSIONS_ETCD_CERT", junk, "PI_SESSIONS_ETCD_KEY", junk), resolve, "PI_SESSIONS_ETCD_CERT"},
		{ok, append(resolve, "--etcd-cert", junk, "--etcd-key", junk), "--etcd-cert"},
		{with(tls, "PI_SESSIONS_ETCD_CA", missing), resolve, "PI_SESSIONS_ETCD_CA"},
		{tls, append(resolve, "--etcd-ca", junk), "--etcd-ca"},
		{with(tls, "PI_SESSIONS_ETCD_CERT", junk), resolve, "PI_SESSIONS_ETCD_CERT"},
		{tls, append(resolve, "--etcd-key", junk), "--etcd-key"},
		{tls, append(resolve, "--etcd-cert", junk, "--etcd-key", junk), "--etcd-cert"},
		{with(tls, "PI_SESSIONS_ETCD_CERT", junk, "PI_SESSIONS_ETCD_KEY", missing), resolve, "PI_SESSIONS_ETCD_KEY"},
		{with(ok, "PI_SESSIONS_ETCD_USER", "sessdb"), resolve, "PI_SESSIONS_ETCD_USER"},
		// White space around a user name is a quoting mistake (an env
		// file's trailing blank): a login etcd refuses, every promote
		// promote-failed.
		{with(ok, "PI_SESSIONS_ETCD_USER", "sessdb ", "PI_SESSIONS_ETCD_PASSWORD", fleetSecret), resolve, "PI_SESSIONS_ETCD_USER"},
		{with(ok, "PI_SESSIONS_ETCD_PASSWORD", fleetSecret), append(resolve, "--etcd-user", "\tsessdb"), "--etcd-user"},
		{with(ok, "PI_SESSIONS_ETCD_PASSWORD", fleetSecret), resolve, "PI_SESSIONS_ETCD_PASSWORD"},
		// A user or password that is not UTF-8 is a login gRPC cannot
		// send: etcd's answer was an internal marshaling error, exit 1,
		// naming neither (store-unavailable here, where nothing listens).
		{with(ok, "PI_SESSIONS_ETCD_USER", "sess\xffdb", "PI_SESSIONS_ETCD_PASSWORD", fleetSecret, "PI_SESSIONS_ETCD_TIMEOUT", "200ms"), resolve, "PI_SESSIONS_ETCD_USER"},
		{with(ok, "PI_SESSIONS_ETCD_USER", "sessdb", "PI_SESSIONS_ETCD_PASSWORD", fleetSecret+"\xff\n", "PI_SESSIONS_ETCD_TIMEOUT", "200ms"), resolve, "PI_SESSIONS_ETCD_PASSWORD"},
		{with(ok, "PI_SESSIONS_ETCD_USER", "sessdb", "PI_SESSIONS_ETCD_TIMEOUT", "200ms"), append(resolve, "--etcd-password-file", notUTF8Secret), "--etcd-password-file"},
		{ok, append(resolve, "--etcd-password-file", file), "--etcd-password-file"},
		{with(ok, "PI_SESSIONS_ETCD_USER", "sessdb"), append(resolve, "--etcd-password-file", missing), "--etcd-password-file"},
		{with(ok, "PI_SESSIONS_ETCD_USER", "sessdb"), append(resolve, "--etcd-password-file", empty), "--etcd-password-file"},
		{with(ok, "PI_SESSIONS_ETCD_USER", "sessdb"), append(resolve, "--etcd-password-file", huge), "--etcd-password-file"},
		{with(ok, "PI_SESSIONS_ETCD_USER", "sessdb"), append(resolve, "--etcd-password-file", fifo), "--etcd-password-file"},
		{with(ok, "PI_SESSIONS_ETCD_USER", "sessdb"), append(resolve, "--etcd-password-file", tmp), "--etcd-password-file"},
		{with(ok, "PI_SESSIONS_ETCD_TIMEOUT", "5"), resolve, "PI_SESSIONS_ETCD_TIMEOUT"},
		{ok, append(resolve, "--etcd-timeout", "-1s"), "--etcd-timeout"},
		{ok, append(resolve, "--etcd-timeout", "+1s"), "--etcd-timeout"},
		{ok, append(resolve, "--etcd-timeout", "0s"), "--etcd-timeout"},
		{ok, append(resolve, "--etcd-timeout", "1 s"), "--etcd-timeout"}, // a blank inside (around one is trimmed)
		{ok, append(resolve, "--etcd-timeout", "1e3s"), "--etcd-timeout"},
		{ok, append(resolve, "--etcd-timeout", "11m"), "--etcd-timeout"},
		// No member answers sooner than a millisecond: every resolve was
		// store-unavailable, exit 0.
		{ok, append(resolve, "--etcd-timeout", "999us"), "--etcd-timeout"},
		{with(ok, "PI_SESSIONS_ETCD_TIMEOUT", "5ns"), resolve, "PI_SESSIONS_ETCD_TIMEOUT"},
		// A store is a sessions root or a fleet.
		{with(ok, "PI_SESSIONS_DIR", tmp), resolve, "PI_SESSIONS_DIR and PI_SESSIONS_ETCD_ENDPOINTS"},
		{ok, append(resolve, "--sessions-dir", tmp), "--sessions-dir and PI_SESSIONS_ETCD_ENDPOINTS"},
		{ok, []string{"dump", tmp}, "DIR argument"},
		{ok, []string{"check", tmp}, "DIR argument"},
		{ok, []string{"reap", tmp}, "DIR argument"},
		{ok, []string{"promote", "--job-dir", tmp, "--pi-version", "1", "--sessions-dir", tmp}, "--sessions-dir"},
		// A fleet setting without a fleet does nothing: refused.
		{map[string]string{"PI_SESSIONS_ETCD_PREFIX": "/x"}, resolve, "PI_SESSIONS_ETCD_PREFIX"},
		{map[string]string{"PI_SESSIONS_TRANSCRIPTS_DIR": dir}, []string{"dump"}, "PI_SESSIONS_TRANSCRIPTS_DIR"},
		{nil, append(resolve, "--etcd-ca", junk), "--etcd-ca"},
		{nil, []string{"check", "--etcd-cert", junk}, "--etcd-cert"},
		{map[string]string{"PI_SESSIONS_ETCD_KEY": junk}, []string{"reap"}, "PI_SESSIONS_ETCD_KEY"},
		{map[string]string{"PI_SESSIONS_ETCD_USER": "u"}, resolve, "PI_SESSIONS_ETCD_USER"},
		{map[string]string{"PI_SESSIONS_ETCD_PASSWORD": fleetSecret}, resolve, "PI_SESSIONS_ETCD_PASSWORD"},
		{nil, append(resolve, "--etcd-password-file", file), "--etcd-password-file"},
		{map[string]string{"PI_SESSIONS_ETCD_TIMEOUT": "1s"}, []string{"promote", "--job-dir", tmp, "--pi-version", "1"}, "PI_SESSIONS_ETCD_TIMEOUT"},
		// The walks' own fleet flags.
		{nil, []string{"reap", "--grace", "1h", dir}, "--grace"},
		{ok, []string{"reap", "--grace", "soon"}, "--grace"},
		{ok, []string{"check", "--grace", "-1h"}, "--grace"},
		{ok, []string{"check", "--repair", "--accept", key}, "--accept"},
		{ok, []string{"check", "--repair", "--quarantine", key}, "--quarantine"},
		{ok, []string{"check", "--deep-check-timeout", "1s"}, "--deep-check-timeout"},
	} {
		clearEnv(t)
		for k, v := range c.env {
			t.Setenv(k, v)
		}
		code, out, errs := runCLI(t, c.args...)
		if code != exitUsage || out != "" || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, c.name) {
			t.Errorf("%v %v: exit %d, stdout %q, stderr %q; want exit 2 and one line naming %s", c.env, c.args, code, out, errs, c.name)
		}
		if strings.Contains(errs, fleetSecret) {
			t.Errorf("%v %v: the password is on stderr: %q", c.env, c.args, errs)
		}
	}
}

// A huge value in a fleet variable or flag is quoted as a short prefix and
// its length: one short line, like every other knob's.
func TestFleetErrorsQuoteABoundedPrefix(t *testing.T) {
	hugeValue := strings.Repeat("9", 100<<10) + "x"
	dir := t.TempDir()
	resolve := []string{"resolve", "--key", strings.Repeat("a", 32), "--job-dir", dir, "--pi-version", "1"}
	for _, c := range []struct {
		env  map[string]string
		args []string
	}{
		{map[string]string{"PI_SESSIONS_ETCD_ENDPOINTS": hugeValue}, resolve},
		{map[string]string{"PI_SESSIONS_ETCD_ENDPOINTS": "http://a:1", "PI_SESSIONS_TRANSCRIPTS_DIR": dir, "PI_SESSIONS_ETCD_PREFIX": "/\x01" + hugeValue}, resolve},
		{map[string]string{"PI_SESSIONS_ETCD_ENDPOINTS": "http://a:1", "PI_SESSIONS_TRANSCRIPTS_DIR": dir, "PI_SESSIONS_ETCD_TIMEOUT": hugeValue}, resolve},
		{map[string]string{"PI_SESSIONS_ETCD_ENDPOINTS": "http://a:1"}, append(resolve, "--transcripts-dir", hugeValue)},
		{map[string]string{"PI_SESSIONS_ETCD_ENDPOINTS": "http://a:1", "PI_SESSIONS_TRANSCRIPTS_DIR": dir}, []string{"dump", hugeValue}},
		{map[string]string{"PI_SESSIONS_ETCD_ENDPOINTS": "http://a:1", "PI_SESSIONS_TRANSCRIPTS_DIR": dir}, []string{"reap", "--grace", hugeValue}},
	} {
		clearEnv(t)
		for k, v := range c.env {
			t.Setenv(k, v)
		}
		code, out, errs := runCLI(t, c.args...)
		if code != exitUsage || out != "" || len(errs) > 400 || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, "…(10240") {
			t.Errorf("%.60v: exit %d, stdout %.100q; want exit 2 and one short line quoting a prefix and the length, got %d bytes: %.300q", c.env, code, out, len(errs), errs)
		}
	}
}

// The fleet's variables are variables sessdb reads: a misspelt one is
// named with the closest, and the right ones raise no warning.
func TestFleetVariablesAreKnown(t *testing.T) {
	clearEnv(t)
	t.Setenv("PI_SESSIONS_ETCD_ENDPOINT", "http://127.0.0.1:1")
	t.Setenv("PI_SESSIONS_ETCD_PASSWORD", "")
	_, _, errs := runCLI(t, "dump", t.TempDir())
	if !strings.Contains(errs, "PI_SESSIONS_ETCD_ENDPOINT is not a variable sessdb reads") || !strings.Contains(errs, "did you mean PI_SESSIONS_ETCD_ENDPOINTS?") {
		t.Errorf("a misspelt fleet variable: %q", errs)
	}
	// Two letters swapped in the last word: as far by edit distance as
	// any other fleet variable is by words (ETCD_CA has one word the
	// typo lacks, and lacks one it has); the letters decide.
	for name, want := range map[string]string{
		"PI_SESSIONS_ETCD_PASSWROD":  "PI_SESSIONS_ETCD_PASSWORD",
		"PI_SESSIONS_ETCD_ENDPIONTS": "PI_SESSIONS_ETCD_ENDPOINTS",
		"PI_SESSIONS_ETCD_PERFIX":    "PI_SESSIONS_ETCD_PREFIX",
		"PI_SESSIONS_ETCD_TIMEUOT":   "PI_SESSIONS_ETCD_TIMEOUT",
		"PI_SESSIONS_ETCD_UESR":      "PI_SESSIONS_ETCD_USER",
	} {
		if got := closest(name, knownEnv()); got != want {
			t.Errorf("closest to %s: %s, want %s", name, got, want)
		}
	}
	// Every variable with one letter dropped, or two next to each other
	// swapped, is a typo of it: none is pointed elsewhere (a misspelt
	// PI_SESSIONS_TRANSCRIPTS_DIR was pointed at PI_SESSIONS_DIR, which
	// a fleet refuses, one word away).
	known := knownEnv()
	for _, v := range known {
		for i := range len(v) - 1 {
			for _, typo := range []string{v[:i] + v[i+1:], v[:i] + v[i+1:i+2] + v[i:i+1] + v[i+2:]} {
				if typo == v || slices.Contains(known, typo) || !strings.HasPrefix(typo, envPrefix) {
					continue
				}
				if got := closest(typo, known); got != v {
					t.Errorf("closest to %s: %s, want %s", typo, got, v)
				}
			}
		}
	}
	// A name cut short is the variable it begins: PI_SESSIONS_ETCD_PASS
	// was pointed at PI_SESSIONS_ETCD_CA (one word from it, as from
	// PASSWORD, and fewer letters), PI_SESSIONS_ETCD_US at
	// PI_SESSIONS_ETCD_CA (two letters from each, CA first in order).
	for name, want := range map[string]string{
		"PI_SESSIONS_ETCD_PASS":    "PI_SESSIONS_ETCD_PASSWORD",
		"PI_SESSIONS_ETCD_US":      "PI_SESSIONS_ETCD_USER",
		"PI_SESSIONS_ETCD_END":     "PI_SESSIONS_ETCD_ENDPOINTS",
		"PI_SESSIONS_TRANSCRIPTS":  "PI_SESSIONS_TRANSCRIPTS_DIR",
		"PI_SESSION_MAX_CONTEXT":   "PI_SESSION_MAX_CONTEXT_PCT",
		"PI_SESSION_PROMOTE":       "PI_SESSION_PROMOTE_REQUIRE",
		"PI_SESSIONS_ETCD_TIME":    "PI_SESSIONS_ETCD_TIMEOUT",
		"PI_SESSIONS_ETCD_PASSWOR": "PI_SESSIONS_ETCD_PASSWORD",
		"PI_SESSIONS_ETCD_PRE":     "PI_SESSIONS_ETCD_PREFIX",
	} {
		if got := closest(name, knownEnv()); got != want {
			t.Errorf("closest to %s: %s, want %s", name, got, want)
		}
	}
	// Every prefix of a variable is pointed at a variable it begins: that
	// one, if no other begins with it.
	for _, v := range known {
		for i := len(envPrefix); i < len(v); i++ {
			cut := v[:i]
			if slices.Contains(known, cut) {
				continue
			}
			var begun []string
			for _, k := range known {
				if strings.HasPrefix(k, cut) {
					begun = append(begun, k)
				}
			}
			if got := closest(cut, known); !slices.Contains(begun, got) || len(begun) == 1 && got != v {
				t.Errorf("closest to %s: %s, want one of %v", cut, got, begun)
			}
		}
	}
	// The warning a command prints says so too.
	clearEnv(t)
	t.Setenv("PI_SESSIONS_ETCD_PASS", "x")
	if _, _, errs := runCLI(t, "dump", t.TempDir()); !strings.Contains(errs, "PI_SESSIONS_ETCD_PASS is not a variable sessdb reads, and is ignored; did you mean PI_SESSIONS_ETCD_PASSWORD?") {
		t.Errorf("PI_SESSIONS_ETCD_PASS: %q", errs)
	}
	for _, v := range []string{"PI_SESSIONS_ETCD_ENDPOINTS", "PI_SESSIONS_ETCD_PREFIX", "PI_SESSIONS_TRANSCRIPTS_DIR", "PI_SESSIONS_ETCD_CA", "PI_SESSIONS_ETCD_CERT",
		"PI_SESSIONS_ETCD_KEY", "PI_SESSIONS_ETCD_USER", "PI_SESSIONS_ETCD_PASSWORD", "PI_SESSIONS_ETCD_TIMEOUT"} {
		found := false
		for _, k := range knownEnv() {
			found = found || k == v
		}
		if !found {
			t.Errorf("%s is not among the variables sessdb reads", v)
		}
	}
}

// PI_SESSIONS_ETCD_PASSWORD is read as --etcd-password-file reads its
// file: up to its first newline, a CR before it dropped. A Kubernetes
// secret made from a file that ends in a newline (`echo secret >`),
// exposed as a variable, is the common way a newline arrives; the same
// secret then works either way. A first line that is empty is refused,
// naming the variable, never quoting it. Before: the password was
// "s3cret-never-printed\n", a login etcd refuses.
func TestThePasswordVariableIsReadAsItsFileIs(t *testing.T) {
	file := filepath.Join(t.TempDir(), "password")
	for _, v := range []string{fleetSecret, fleetSecret + "\n", fleetSecret + "\r\n", fleetSecret + "\nsecond line\n"} {
		os.WriteFile(file, []byte(v), 0o600)
		for _, fromFile := range []bool{false, true} {
			f := bindFleet(flag.NewFlagSet("x", flag.ContinueOnError))
			env := map[string]string{"PI_SESSIONS_ETCD_USER": "sessdb", "PI_SESSIONS_ETCD_PASSWORD": v}
			if fromFile {
				f.password.value = file
			}
			var fc fleet.Config
			if err := f.login(func(k string) string { return env[k] }, &fc); err != nil || fc.Password != fleetSecret {
				t.Errorf("%q (file: %v): password %q, %v; want %q", v, fromFile, fc.Password, err, fleetSecret)
			}
		}
	}
	f := bindFleet(flag.NewFlagSet("x", flag.ContinueOnError))
	env := map[string]string{"PI_SESSIONS_ETCD_USER": "sessdb", "PI_SESSIONS_ETCD_PASSWORD": "\n" + fleetSecret}
	var fc fleet.Config
	err := f.login(func(k string) string { return env[k] }, &fc)
	if err == nil || !strings.Contains(err.Error(), "PI_SESSIONS_ETCD_PASSWORD") || strings.Contains(err.Error(), fleetSecret) {
		t.Errorf("a first line that is empty: %v; want an error naming the variable, not quoting it", err)
	}
}

// etcdctl takes its user as USER:PASSWORD (ETCDCTL_USER, --user, and
// fleet.md's own maintenance steps), and an operator who sets
// PI_SESSIONS_ETCD_USER the same way put the password in the user's name.
// Taken so, it was a login etcd refuses, every resolve a fault (exit 1)
// and every promote promote-failed, and each check that quotes the user's
// name (a variable, white space, quotes, a byte that is not UTF-8)
// printed the password into the job's log. Such a name is a configuration
// error, exit 2, naming the variable or flag and never quoting the value.
// etcd does make users whose names hold a ':' (etcdctl user add 'a:b'
// --new-user-password=P), which no setting tells from the slip: the line
// says such a user cannot be used, not only that the value is a slip.
func TestAnEtcdUserInEtcdctlsUserPasswordFormIsRefusedUnquoted(t *testing.T) {
	dir := t.TempDir()
	key := strings.Repeat("a", 32)
	resolve := []string{"resolve", "--key", key, "--job-dir", filepath.Join(t.TempDir(), "job"), "--pi-version", "1", "--log-format", "console"}
	for _, c := range []struct {
		user string
		flag bool // given by --etcd-user rather than the variable
	}{
		{"sessdb:" + fleetSecret, false},
		{"sessdb:" + fleetSecret, true},
		{"sessdb:pa$" + fleetSecret, false},
		{"sessdb:" + fleetSecret + " ", false},
		{`"sessdb:` + fleetSecret + `"`, true},
		{"sessdb:" + fleetSecret + "\xff", false},
		{"sessdb:`" + fleetSecret + "`", false},
	} {
		clearEnv(t)
		t.Setenv("PI_SESSIONS_ETCD_ENDPOINTS", "http://127.0.0.1:1")
		t.Setenv("PI_SESSIONS_TRANSCRIPTS_DIR", dir)
		t.Setenv("PI_SESSIONS_ETCD_PASSWORD", "another-password")
		t.Setenv("PI_SESSIONS_ETCD_TIMEOUT", "200ms")
		args, name := resolve, "PI_SESSIONS_ETCD_USER"
		if c.flag {
			args, name = append(slices.Clone(resolve), "--etcd-user", c.user), "--etcd-user"
		} else {
			t.Setenv("PI_SESSIONS_ETCD_USER", c.user)
		}
		code, out, errs := runCLI(t, args...)
		if code != exitUsage || out != "" || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, name) || !strings.Contains(errs, "USER:PASSWORD") || !strings.Contains(errs, "whose name holds a ':' cannot be used") {
			t.Errorf("%s=%q: exit %d, stdout %q, stderr %q; want exit 2, one line naming %s, etcdctl's USER:PASSWORD form, and that a user whose name holds a ':' (which etcd makes) cannot be used", name, c.user, code, out, errs, name)
		}
		if strings.Contains(errs, fleetSecret) {
			t.Errorf("%s=%q: the password is on stderr: %q", name, c.user, errs)
		}
		// Given by the flag, the password was on a command line every
		// user of the host can read: the line says to change it; from
		// the environment, it was not, and the line does not.
		if strings.Contains(errs, "change that password") != c.flag {
			t.Errorf("%s=%q: stderr %q; want it to say to change the password only where it was on the command line", name, c.user, errs)
		}
	}
}

// --etcd-timeout takes the least value its help names ("from 1ms"): a
// resolve with it is no usage error, whatever etcd then answers (here
// nothing listens: store-unavailable, exit 0).
func TestTheEtcdTimeoutTakesItsLeastValue(t *testing.T) {
	tmp := t.TempDir()
	dir := filepath.Join(tmp, "transcripts")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	clearEnv(t)
	t.Setenv("PI_SESSIONS_ETCD_ENDPOINTS", "http://127.0.0.1:1")
	t.Setenv("PI_SESSIONS_TRANSCRIPTS_DIR", dir)
	key := "4668107cac2e99b44415c5606b32ef14"
	code, out, errs := runCLI(t, "resolve", "--key", key, "--job-dir", filepath.Join(tmp, "job"), "--pi-version", "0.58.3", "--etcd-timeout", "1ms")
	if code == exitUsage || strings.Contains(errs, "--etcd-timeout") {
		t.Errorf("resolve with --etcd-timeout 1ms: exit %d, stdout %q, stderr %q; want it taken, no usage error", code, out, errs)
	}
}

// Every --etcd-timeout out of its range is refused with the range its
// help gives ("from 1ms to 10m"), whichever end it misses: one message
// that says "above 0" sends the operator to try 1us, refused in turn.
func TestAnEtcdTimeoutOutOfRangeNamesItsLeastValue(t *testing.T) {
	tmp := t.TempDir()
	dir := filepath.Join(tmp, "transcripts")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	least := etcdmeta.MinRequestTimeout.String()
	for _, raw := range []string{"0s", "0ms", "999us", "10m1ns", "11m", "600001ms"} {
		for _, viaEnv := range []bool{false, true} {
			clearEnv(t)
			t.Setenv("PI_SESSIONS_ETCD_ENDPOINTS", "http://127.0.0.1:1")
			t.Setenv("PI_SESSIONS_TRANSCRIPTS_DIR", dir)
			args := []string{"dump"}
			if viaEnv {
				t.Setenv("PI_SESSIONS_ETCD_TIMEOUT", raw)
			} else {
				args = append(args, "--etcd-timeout", raw)
			}
			code, _, errs := runCLI(t, args...)
			if code != exitUsage || !strings.Contains(errs, "out of range") || !strings.Contains(errs, "at least "+least) || strings.Contains(errs, "above 0") {
				t.Errorf("dump with timeout %q (env %v): exit %d, stderr %q; want exit %d, out of range, naming its least value %s", raw, viaEnv, code, errs, exitUsage, least)
			}
		}
	}
}

// PI_SESSIONS_ETCD_PASSWORD holds the password itself; its help names it
// beside --etcd-password-file, as every flag is named beside its
// variable, and an operator who put the password file's name in it had
// that name sent as the password: every login refused ("invalid user ID
// or password"), exit 1, naming no setting. A variable whose value is the
// absolute name of a regular file is a configuration error, exit 2, one
// line naming the variable and the flag, the value not quoted. A name of
// no file, or of a directory, is taken as the password it may be, as is
// a relative name, though it names a file in the working directory: a
// password may be a word that does (only an absolute name is no password
// anyone chose).
func TestAPasswordVariableThatNamesAFileIsRefused(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(t.TempDir(), "etcd-password")
	if err := os.WriteFile(file, []byte(fleetSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Chdir(filepath.Dir(file))
	key := strings.Repeat("a", 32)
	for _, c := range []struct {
		password string
		refused  bool
	}{
		{file, true},
		{file + "\n", true}, // read up to its first newline, as the value is
		{file + ".gone", false},
		{dir, false},
		{fleetSecret, false},
		{filepath.Base(file), false},
		{"./" + filepath.Base(file), false},
	} {
		clearEnv(t)
		t.Setenv("PI_SESSIONS_ETCD_ENDPOINTS", "http://127.0.0.1:1")
		t.Setenv("PI_SESSIONS_TRANSCRIPTS_DIR", dir)
		t.Setenv("PI_SESSIONS_ETCD_USER", "sessdb")
		t.Setenv("PI_SESSIONS_ETCD_PASSWORD", c.password)
		t.Setenv("PI_SESSIONS_ETCD_TIMEOUT", "200ms")
		code, out, errs := runCLI(t, "resolve", "--key", key, "--job-dir", filepath.Join(t.TempDir(), "job"), "--pi-version", "1", "--log-format", "console")
		if !c.refused {
			if code == exitUsage {
				t.Errorf("PI_SESSIONS_ETCD_PASSWORD=%q: exit 2, stderr %q; want it taken as the password", c.password, errs)
			}
			continue
		}
		if code != exitUsage || out != "" || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, "PI_SESSIONS_ETCD_PASSWORD holds the name of a file") || !strings.Contains(errs, "--etcd-password-file") {
			t.Errorf("PI_SESSIONS_ETCD_PASSWORD=%q: exit %d, stdout %q, stderr %q; want exit 2, one line naming the variable and --etcd-password-file", c.password, code, out, errs)
		}
		if strings.Contains(errs, file) {
			t.Errorf("PI_SESSIONS_ETCD_PASSWORD=%q: the value is quoted on stderr: %q", c.password, errs)
		}
	}
}
