package main

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Kubernetes expands a container variable's "$(NAME)" only when NAME is
// defined before it in the pod's env list, and passes it unchanged when
// it is not; a shell's command substitution "$(pwd)" in an env file is
// passed as written too. Taken as a relative path, that was a second
// sessions root made in the worker's working directory by the first
// promote, as "$HOME/sessions" was. A sessions root, a transcripts dir or
// a job dir holding "$(" is refused as one naming a variable is, exit 2,
// and nothing is made.
func TestAnUnexpandedDependentVariableIsAConfigurationError(t *testing.T) {
	clearEnv(t)
	sample := copySample(t)
	cwd := t.TempDir()
	t.Chdir(cwd)
	job := filepath.Join(t.TempDir(), "job")
	t.Setenv("PI_SESSIONS_DIR", "$(STATE_DIR)/sessions")
	key := "4668107cac2e99b44415c5606b32ef14"
	code, out, errs := runCLI(t, "resolve", "--key", key, "--job-dir", job, "--pi-version", "1", "--log-format", "console")
	if code == exitOK {
		// The code as it was: a cold start. Run the job, promote it.
		f, err := os.OpenFile(filepath.Join(job, "session", "current.jsonl"), os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString(header + `{"type":"message","id":"x","parentId":null,"timestamp":"2026-11-29T09:00:00Z","message":{"role":"user","content":"hi"}}` + "\n")
		f.Close()
	}
	if code != exitUsage || out != "" || !strings.Contains(errs, "variable") {
		t.Errorf("PI_SESSIONS_DIR=$(STATE_DIR)/sessions resolve: exit %d, stdout %q, stderr %q; want exit 2 naming the unexpanded variable", code, out, errs)
	}
	code, out, errs = runCLI(t, "promote", "--job-dir", job, "--pi-version", "1", "--log-format", "console")
	if code != exitUsage || out != "" || !strings.Contains(errs, "variable") {
		t.Errorf("PI_SESSIONS_DIR=$(STATE_DIR)/sessions promote: exit %d, stdout %q, stderr %q; want exit 2 naming the unexpanded variable", code, out, errs)
	}
	t.Setenv("PI_SESSIONS_DIR", "")
	for _, args := range [][]string{
		{"dump", "$(pwd)/sessions"},
		{"dump", "$_STATE/sessions"},
		{"dump", "--etcd-endpoints", "http://127.0.0.1:1", "--transcripts-dir", "$(TRANSCRIPTS_DIR)"},
		{"resolve", "--sessions-dir", sample, "--key", key, "--job-dir", "$(JOB_DIR)", "--pi-version", "1"},
	} {
		code, out, errs := runCLI(t, append(args, "--log-format", "console")...)
		if code != exitUsage || out != "" || !strings.Contains(errs, "variable") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 naming the unexpanded variable", args, code, brief(out), errs)
		}
	}
	var made []string
	filepath.WalkDir(cwd, func(p string, d os.DirEntry, err error) error {
		if p != cwd {
			made = append(made, strings.TrimPrefix(p, cwd))
		}
		return nil
	})
	if len(made) != 0 {
		t.Errorf("made in the working directory: %v", made)
	}
}

// What a shell would not expand either is a name like any other: a "~"
// inside a component (Kubernetes' kubernetes.io~empty-dir volumes), a "$"
// at the end (a Samba share's name), before a digit, a dash, a dot or a
// parenthesis that is not its opener's. Each such sessions root is walked,
// exit 0, and each such job dir made.
func TestAShellFreeDollarOrTildeIsAName(t *testing.T) {
	clearEnv(t)
	base := t.TempDir()
	root := copySample(t)
	for _, name := range []string{"kubernetes.io~empty-dir", "a~", "share$", "price$5", "a$-b", "a$.b", "a)$", "a$)b"} {
		dir := filepath.Join(base, name, "sessions")
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if code, _, errs := runCLI(t, "dump", dir); code != exitOK {
			t.Errorf("dump %s: exit %d, %s; want it walked", dir, code, errs)
		}
		t.Setenv("PI_SESSIONS_TRANSCRIPTS_DIR", dir)
		code, _, errs := runCLI(t, "dump", "--etcd-endpoints", "http://127.0.0.1:1", "--etcd-timeout", "10ms", "--log-format", "console")
		if strings.Contains(errs, "shell") || strings.Contains(errs, "PI_SESSIONS_TRANSCRIPTS_DIR") {
			t.Errorf("transcripts dir %s: exit %d, %s; want it taken (etcd then unreachable)", dir, code, errs)
		}
		t.Setenv("PI_SESSIONS_TRANSCRIPTS_DIR", "")
		job := filepath.Join(base, name, "job")
		if code, _, errs := runCLI(t, "resolve", "--sessions-dir", root, "--key", "4668107cac2e99b44415c5606b32ef14", "--job-dir", job, "--pi-version", "0.58.3"); code != exitOK {
			t.Errorf("resolve --job-dir %s: exit %d, %s; want it made", job, code, errs)
		}
	}
}

// `sessdb reap --sessions-dir "$OLD_ROOT"` with OLD_ROOT unset is the
// empty DIR argument of TestAnEmptyArgumentIsAUsageError given as a flag:
// the empty value counted as not given, the walk went to PI_SESSIONS_DIR,
// another root than the one named, and reap removed its expired keys.
// The same for the flags that name a fleet (its endpoints, prefix and
// transcripts dir): given empty, the variable's fleet, or the default
// prefix's namespace, would be walked instead. Each flag that names the
// store is a usage error when given empty, exit 2, and nothing is touched.
func TestAnEmptyStoreFlagIsAUsageError(t *testing.T) {
	clearEnv(t)
	root := copySample(t)
	t.Setenv("PI_SESSIONS_DIR", root)
	before, _ := os.ReadDir(root)
	for _, args := range [][]string{
		{"reap", "--sessions-dir", ""},
		{"reap", "--sessions-dir="},
		{"dump", "--json", "--sessions-dir", ""},
		{"check", "--repair", "--sessions-dir", ""},
		{"stats", "--sessions-dir", ""},
		{"migrate", "--dry-run", "--sessions-dir", ""},
		{"resolve", "--sessions-dir", "", "--key", "4668107cac2e99b44415c5606b32ef14", "--job-dir", filepath.Join(t.TempDir(), "job"), "--pi-version", "1"},
	} {
		code, out, errs := runCLI(t, append(args, "--log-format", "console")...)
		if code != exitUsage || out != "" || !strings.Contains(errs, "--sessions-dir") || !strings.Contains(errs, "empty") {
			t.Errorf("sessdb %q: exit %d, stdout %q, stderr %q; want exit 2 naming --sessions-dir empty, nothing on stdout", args, code, brief(out), errs)
		}
	}
	after, _ := os.ReadDir(root)
	if len(after) != len(before) {
		t.Errorf("the configured root had %d names, has %d: a command given an empty --sessions-dir acted on it", len(before), len(after))
	}
	t.Setenv("PI_SESSIONS_DIR", "")
	t.Setenv("PI_SESSIONS_ETCD_ENDPOINTS", "http://127.0.0.1:1")
	t.Setenv("PI_SESSIONS_TRANSCRIPTS_DIR", t.TempDir())
	t.Setenv("PI_SESSIONS_ETCD_TIMEOUT", "10ms")
	for _, flag := range []string{"--etcd-endpoints", "--etcd-prefix", "--transcripts-dir"} {
		code, out, errs := runCLI(t, "reap", "--dry-run", flag, "", "--log-format", "console")
		if code != exitUsage || out != "" || !strings.Contains(errs, flag) || !strings.Contains(errs, "empty") {
			t.Errorf("reap %s \"\": exit %d, stdout %q, stderr %q; want exit 2 naming %s empty", flag, code, brief(out), errs, flag)
		}
	}
	// Left out, each is taken from its variable, as documented.
	if code, _, errs := runCLI(t, "dump", root, "--log-format", "console"); code != exitUsage || !strings.Contains(errs, "fleet") {
		t.Errorf("dump DIR in a fleet's environment: exit %d, %s; want the root and the fleet refused together (exit 2)", code, errs)
	}
}

// `sessdb dump --json --at "$AT"` with AT empty judged the root now, exit
// 0: a caller that asked for the verdicts at a time (to reproduce one, or
// to see what a reap at that time would do) read today's without a word,
// as `--key ""` printed every key. An empty --at is a usage error, exit 2.
func TestAnEmptyAtIsAUsageError(t *testing.T) {
	clearEnv(t)
	root := copySample(t)
	for _, args := range [][]string{
		{"dump", "--json", "--at", "", root},
		{"stats", "--at=", root},
		{"reap", "--dry-run", "--at", "", root},
	} {
		code, out, errs := runCLI(t, append(args, "--log-format", "console")...)
		if code != exitUsage || out != "" || !strings.Contains(errs, "--at") {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit 2 naming --at, nothing on stdout", args, code, brief(out), errs)
		}
	}
	if code, out, errs := runCLI(t, "dump", "--json", "--at", "2026-11-29T10:00:00Z", root); code != exitOK || out == "" {
		t.Errorf("dump --at a time: exit %d, %s", code, errs)
	}
}

// flagForAValue refuses only a value that is one of the command's flags:
// any other value that begins with a dash (a venue or model named so, a
// pi version "-1", a value "-" or "--") is the caller's, given as a word
// of its own after its flag, and taken as given.
func TestADashLedValueThatNamesNoFlagIsTaken(t *testing.T) {
	atSampleTime(t)
	root := copySample(t)
	job := filepath.Join(t.TempDir(), "job")
	code, out, errs := runCLI(t, "resolve", "--sessions-dir", root, "--key", "4668107cac2e99b44415c5606b32ef14", "--job-dir", job, "--pi-version", "-1", "--venue", "-edge", "--model", "-", "--job", "--")
	if code != exitOK || !strings.Contains(out, `"reason":"venue-changed"`) {
		t.Errorf("resolve --venue -edge: exit %d, %s%s; want a cold start venue-changed (the venue taken as given)", code, out, errs)
	}
	code, out, errs = runCLI(t, "dump", "--json", "--as-job", "--pi-version", "-1", "--venue", "-edge", "--key", "4668107cac2e99b44415c5606b32ef14", root)
	if code != exitOK || !strings.Contains(out, `"verdict":{"reason":"venue-changed"`) {
		t.Errorf("dump --as-job --venue -edge: exit %d, %s%s; want the verdict venue-changed", code, out, errs)
	}
	// After "--" every word is an argument, a flag's name included: two
	// are one too many, never a flag taken for another's value.
	code, _, errs = runCLI(t, "dump", root, "--", "--key", "--json", "--log-format", "console")
	if code != exitUsage || !strings.Contains(errs, "unexpected argument") {
		t.Errorf("dump DIR -- --key --json: exit %d, %q; want exit 2, unexpected argument", code, errs)
	}
}

// The files a configuration names (a models file, the etcd CA, client
// certificate and key, the password file) come from the same env files
// and units as a sessions root: "~/ca.pem", "$CREDENTIALS_DIRECTORY/key.pem"
// or a name with an env file's trailing blank failed as "stat ~/ca.pem: no
// such file or directory", the cause unsaid (and a trailing blank all but
// invisible). Each is a configuration error that says what is wrong with
// the name, exit 2, as a sessions root's is.
func TestAConfiguredFileNamesWhatOnlyAShellExpands(t *testing.T) {
	clearEnv(t)
	root := copySample(t)
	job := filepath.Join(t.TempDir(), "job")
	if code, out, errs := runCLI(t, "resolve", "--sessions-dir", root, "--key", "4668107cac2e99b44415c5606b32ef14", "--job-dir", job, "--pi-version", "0.58.3"); code != exitOK {
		t.Fatalf("resolve: exit %d, %s%s", code, out, errs)
	}
	tr := t.TempDir()
	for _, v := range []struct{ value, says string }{
		{"~/f.pem", "shell"},
		{"$CREDENTIALS_DIRECTORY/f.pem", "shell"},
		{"/etc/ssl/f.pem ", "white space"},
	} {
		t.Setenv("PI_SESSION_MODELS_FILE", v.value)
		code, _, errs := runCLI(t, "promote", "--sessions-dir", root, "--job-dir", job, "--pi-version", "0.58.3", "--log-format", "console")
		if code != exitUsage || !strings.Contains(errs, v.says) || !strings.Contains(errs, "PI_SESSION_MODELS_FILE") {
			t.Errorf("PI_SESSION_MODELS_FILE=%q: exit %d, %q; want exit 2 naming it and saying %q", v.value, code, errs, v.says)
		}
		t.Setenv("PI_SESSION_MODELS_FILE", "")
		for _, env := range []string{"PI_SESSIONS_ETCD_CA", "PI_SESSIONS_ETCD_CERT", "PI_SESSIONS_ETCD_KEY"} {
			t.Setenv("PI_SESSIONS_ETCD_CA", "")
			t.Setenv("PI_SESSIONS_ETCD_CERT", "/nonexistent/cert.pem")
			t.Setenv("PI_SESSIONS_ETCD_KEY", "/nonexistent/key.pem")
			t.Setenv(env, v.value)
			code, _, errs := runCLI(t, "dump", "--etcd-endpoints", "https://127.0.0.1:1", "--transcripts-dir", tr, "--log-format", "console")
			if code != exitUsage || !strings.Contains(errs, v.says) || !strings.Contains(errs, env) {
				t.Errorf("%s=%q: exit %d, %q; want exit 2 naming it and saying %q", env, v.value, code, errs, v.says)
			}
		}
		t.Setenv("PI_SESSIONS_ETCD_CERT", "")
		t.Setenv("PI_SESSIONS_ETCD_KEY", "")
		code, _, errs = runCLI(t, "dump", "--etcd-endpoints", "http://127.0.0.1:1", "--transcripts-dir", tr, "--etcd-user", "u", "--etcd-password-file", v.value, "--log-format", "console")
		if code != exitUsage || !strings.Contains(errs, v.says) || !strings.Contains(errs, "--etcd-password-file") {
			t.Errorf("--etcd-password-file %q: exit %d, %q; want exit 2 naming it and saying %q", v.value, code, errs, v.says)
		}
	}
}

// The fleet's key prefix comes from the same env files and pod specs as
// its transcripts dir: "$FLEET_PREFIX", "${FLEET_PREFIX}" or Kubernetes'
// unresolved "$(FLEET_PREFIX)" was taken as the prefix, another namespace
// in etcd, where every key is absent and promote writes records no other
// worker reads. It is refused as the transcripts dir's is, exit 2; a
// prefix with a "$" that names no variable, or a "~" inside, is a name.
func TestAnUnexpandedEtcdPrefixIsAConfigurationError(t *testing.T) {
	dir := t.TempDir()
	connect := func(prefix string) (string, error) {
		env := map[string]string{"PI_SESSIONS_ETCD_ENDPOINTS": "http://127.0.0.1:2379", "PI_SESSIONS_TRANSCRIPTS_DIR": dir, "PI_SESSIONS_ETCD_PREFIX": prefix}
		fc, _, err := bindFleet(flag.NewFlagSet("t", flag.ContinueOnError)).connection(func(name string) string { return env[name] })
		return fc.Prefix, err
	}
	for _, p := range []string{"$FLEET_PREFIX", "${FLEET_PREFIX}/sessdb", "/fleets/$(FLEET)", "~/sessdb"} {
		got, err := connect(p)
		if err == nil || !strings.Contains(err.Error(), "PI_SESSIONS_ETCD_PREFIX") || !strings.Contains(err.Error(), "shell") {
			t.Errorf("PI_SESSIONS_ETCD_PREFIX=%q: prefix %q, error %v; want a configuration error naming what only a shell expands", p, got, err)
		}
	}
	for _, p := range []string{"/sessdb", "/fleet$5", "/a~b", "/price$"} {
		if got, err := connect(p); err != nil || got != p {
			t.Errorf("PI_SESSIONS_ETCD_PREFIX=%q: prefix %q, error %v; want it taken", p, got, err)
		}
	}
}
