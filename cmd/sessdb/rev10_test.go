package main

import (
	"path/filepath"
	"strings"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// A relative DIR completed by a shell ends with "/" ("sessions/", as tab
// completion writes a directory): `dump --as-job --pi-version 0.58.3
// --venue $V sessions/`, V empty and unquoted, took it for the venue (or
// the model), and dump judged PI_SESSIONS_DIR's root for the venue
// "sessions/", exit 0. No venue, model or pi version ends with "/" (a
// model is PROVIDER/ID), so a stamp given so, with no DIR, is DIR taken
// for a value left out, exit 2, as one beginning with "/" or "./" is;
// --venue=VALUE still gives it.
func TestADirWithATrailingSlashIsNotTakenForAStamp(t *testing.T) {
	clearEnv(t)
	configured := copySample(t)
	t.Setenv("PI_SESSIONS_DIR", configured)
	parent := filepath.Dir(copySample(t))
	t.Chdir(parent)
	before := fingerprint(t, configured)
	for _, c := range []struct {
		flag string
		args []string
	}{
		{"--venue", []string{"dump", "--as-job", "--pi-version", "0.58.3", "--venue", "sessions/"}},
		{"--model", []string{"dump", "--as-job", "--pi-version", "0.58.3", "--venue", "local", "--model", "sessions/"}},
		{"--venue", []string{"dump", "--json", "--as-job", "--pi-version", "0.58.3", "--venue", "data/sessions/"}},
		{"--venue", []string{"dump", "--as-job", "--pi-version", "0.58.3", "--venue", "../sessions"}},
	} {
		code, out, errs := runCLI(t, append(c.args, "--log-format", "console")...)
		if code != exitUsage || out != "" || !strings.Contains(errs, c.flag) || !strings.Contains(errs, "DIR") {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit 2 naming %s and DIR, nothing on stdout", c.args, code, brief(out), errs, c.flag)
		}
	}
	if after := fingerprint(t, configured); after != before {
		t.Errorf("the configured root changed")
	}
	// Given with "=", or with a DIR beside it, it is a stamp; and a
	// stamp with a "/" inside is one.
	for _, args := range [][]string{
		{"dump", "--as-job", "--pi-version", "0.58.3", "--venue=sessions/"},
		{"dump", "--as-job", "--pi-version", "0.58.3", "--venue", "sessions/", "sessions"},
		{"dump", "--as-job", "--pi-version", "0.58.3", "--venue", "k8s/prod", "--model", "anthropic/claude-sonnet-4-5"},
	} {
		if code, out, errs := runCLI(t, append(args, "--log-format", "console")...); code != exitOK || out == "" {
			t.Errorf("%q: exit %d, %s; want it judged, exit 0", args, code, errs)
		}
	}
}

// migrate --to etcd and --from etcd act on a sessions root and a fleet at
// once, and the fleet's --etcd-prefix and --transcripts-dir take any path:
// `migrate --to etcd --etcd-prefix $P /srv/sessions`, P empty and
// unquoted, took DIR for the prefix and migrated PI_SESSIONS_DIR's root
// (the same root) into etcd under the prefix "/srv/sessions", a namespace
// no worker reads, exit 0 ("records written under such a prefix stay
// there"); `--transcripts-dir $T /srv/sessions` wrote the fleet's
// generation files into the root's own key dirs. With no DIR argument, a
// fleet path given as a word of its own that names the sessions root the
// command acts on is DIR taken for a value left out, exit 2, nothing on
// stdout, nothing written. No prefix or transcripts dir is the sessions
// root itself; given with "=" it is taken as written.
func TestADirIsNotTakenForAFleetPath(t *testing.T) {
	f := startFleet(t)
	root := copySample(t)
	t.Setenv("PI_SESSIONS_DIR", root)
	before := fingerprint(t, root)
	for _, c := range []struct {
		flag string
		args []string
	}{
		{"--etcd-prefix", []string{"migrate", "--to", "etcd", "--etcd-prefix", root}},
		{"--etcd-prefix", []string{"migrate", "--to", "etcd", "--dry-run", "--etcd-prefix", root + "/"}},
		{"--transcripts-dir", []string{"migrate", "--to", "etcd", "--transcripts-dir", root}},
		{"--transcripts-dir", []string{"migrate", "--from", "etcd", "--transcripts-dir", root}},
	} {
		code, out, errs := runCLI(t, append(c.args, "--log-format", "console")...)
		if code != exitUsage || out != "" || !strings.Contains(errs, c.flag) || !strings.Contains(errs, "DIR") {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit 2 naming %s and DIR, nothing on stdout", c.args, code, brief(out), errs, c.flag)
		}
	}
	// The root named by --sessions-dir, PI_SESSIONS_DIR naming another:
	// the root the command acts on is the flag's.
	t.Setenv("PI_SESSIONS_DIR", copySample(t))
	code, out, errs := runCLI(t, "migrate", "--to", "etcd", "--dry-run", "--sessions-dir", root, "--transcripts-dir", root, "--log-format", "console")
	if code != exitUsage || out != "" || !strings.Contains(errs, "--transcripts-dir") || !strings.Contains(errs, "DIR") {
		t.Errorf("migrate --to etcd --sessions-dir R --transcripts-dir R: exit %d, stdout %q, stderr %q; want exit 2 naming --transcripts-dir and DIR", code, brief(out), errs)
	}
	t.Setenv("PI_SESSIONS_DIR", root)
	// The root named relative to the working directory, as a shell
	// completes it: the same directory.
	t.Chdir(filepath.Dir(root))
	code, out, errs = runCLI(t, "migrate", "--to", "etcd", "--transcripts-dir", filepath.Base(root), "--log-format", "console")
	if code != exitUsage || out != "" || !strings.Contains(errs, "--transcripts-dir") || !strings.Contains(errs, "DIR") {
		t.Errorf("migrate --to etcd --transcripts-dir %s (relative): exit %d, stdout %q, stderr %q; want exit 2 naming --transcripts-dir and DIR", filepath.Base(root), code, brief(out), errs)
	}
	if after := fingerprint(t, root); after != before {
		t.Errorf("the sessions root changed")
	}
	if got, err := f.c.Client(t).Get(t.Context(), root, clientv3.WithPrefix(), clientv3.WithCountOnly()); err != nil || got.Count != 0 {
		t.Errorf("etcd holds %v keys under the prefix %s (%v); want none", got.Count, root, err)
	}
	// The fleet's own prefix and dir, given as words of their own with
	// the root from PI_SESSIONS_DIR: a migration, dry.
	code, out, errs = runCLI(t, "migrate", "--to", "etcd", "--dry-run", "--etcd-prefix", f.prefix, "--transcripts-dir", f.dir, "--log-format", "console")
	if !strings.Contains(out, "dry run") || strings.Contains(errs, "DIR") {
		t.Errorf("migrate --to etcd --dry-run with the fleet's own prefix and dir: exit %d, %s%s; want a dry run", code, brief(out), errs)
	}
}
