package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// docker's --env-file (and Kubernetes, and a Python env dict) pass a value
// as written, quotes and all: PI_SESSIONS_DIR="/srv/sessions" in such a
// file is the name `"/srv/sessions"`, a relative path, and resolve found
// every key absent there while promote made `./"/srv/sessions"/<key>` in
// the worker's working directory and promoted there. Quotes around the
// whole value are what only a shell (or systemd's EnvironmentFile=)
// removes, as a variable is what only a shell expands: a configuration
// error naming the variable, exit 2, nothing made; the same for a job
// dir, the fleet's names and the etcd user. A quote inside a name, or one
// not closed, is a name.
func TestAQuotedNameIsAConfigurationError(t *testing.T) {
	clearEnv(t)
	sample := copySample(t)
	cwd := t.TempDir()
	t.Chdir(cwd)
	key := "4668107cac2e99b44415c5606b32ef14"
	abs := filepath.Join(t.TempDir(), "sessions")
	job := filepath.Join(t.TempDir(), "job")
	t.Setenv("PI_SESSIONS_DIR", `"`+abs+`"`)
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
	if code != exitUsage || out != "" || !strings.Contains(errs, "PI_SESSIONS_DIR") || !strings.Contains(errs, "quotes") {
		t.Errorf(`PI_SESSIONS_DIR='"%s"' resolve: exit %d, stdout %q, stderr %q; want exit 2 naming it and its quotes`, abs, code, out, errs)
	}
	code, out, errs = runCLI(t, "promote", "--job-dir", job, "--pi-version", "1", "--log-format", "console")
	if code != exitUsage || out != "" || !strings.Contains(errs, "quotes") {
		t.Errorf(`PI_SESSIONS_DIR='"%s"' promote: exit %d, stdout %q, stderr %q; want exit 2 naming its quotes`, abs, code, out, errs)
	}
	t.Setenv("PI_SESSIONS_DIR", "")
	for _, args := range [][]string{
		{"dump", "'" + sample + "'"},
		{"dump", "--etcd-endpoints", "http://127.0.0.1:1", "--transcripts-dir", `"/srv/transcripts"`},
		{"dump", "--etcd-endpoints", "http://127.0.0.1:1", "--transcripts-dir", sample, "--etcd-prefix", `"/sessdb"`},
		{"resolve", "--sessions-dir", sample, "--key", key, "--job-dir", `"job"`, "--pi-version", "1"},
	} {
		code, out, errs := runCLI(t, append(args, "--log-format", "console")...)
		if code != exitUsage || out != "" || !strings.Contains(errs, "quotes") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 naming its quotes", args, code, brief(out), errs)
		}
	}
	t.Setenv("PI_SESSIONS_ETCD_PASSWORD", "secret")
	code, out, errs = runCLI(t, "dump", "--etcd-endpoints", "http://127.0.0.1:1", "--transcripts-dir", sample, "--etcd-user", `"sessdb"`, "--log-format", "console")
	if code != exitUsage || out != "" || !strings.Contains(errs, "--etcd-user") || !strings.Contains(errs, "quotes") {
		t.Errorf(`--etcd-user '"sessdb"': exit %d, stdout %q, stderr %q; want exit 2 naming --etcd-user and its quotes`, code, brief(out), errs)
	}
	t.Setenv("PI_SESSIONS_ETCD_PASSWORD", "")
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
	// A quote inside a name, or one alone, is a name.
	for _, name := range []string{"it's", `a"b"`, `'open`} {
		dir := filepath.Join(t.TempDir(), name, "sessions")
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if code, _, errs := runCLI(t, "dump", dir); code != exitOK {
			t.Errorf("dump %s: exit %d, %s; want it walked", dir, code, errs)
		}
	}
}
