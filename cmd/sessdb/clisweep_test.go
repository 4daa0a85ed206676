package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// An env file's `PI_SESSIONS_DIR=""` (meant as "unset", and passed quotes
// and all by docker's --env-file, Kubernetes and an env dict) is a name
// two bytes long, a relative path: promote would make a dir named `""` in
// the worker's working directory and promote there, every resolve absent.
// The quotes are what refuses it, however short the name they enclose:
// exit 2, naming the variable and its quotes, nothing made.
func TestEmptyQuotesAreAConfigurationError(t *testing.T) {
	clearEnv(t)
	cwd := t.TempDir()
	t.Chdir(cwd)
	job := filepath.Join(t.TempDir(), "job")
	for _, root := range []string{`""`, `''`} {
		t.Setenv("PI_SESSIONS_DIR", root)
		for _, args := range [][]string{
			{"resolve", "--key", "4668107cac2e99b44415c5606b32ef14", "--job-dir", job, "--pi-version", "1"},
			{"promote", "--job-dir", job, "--pi-version", "1"},
			{"dump"},
		} {
			code, out, errs := runCLI(t, append(args, "--log-format", "console")...)
			if code != exitUsage || out != "" || !strings.Contains(errs, "PI_SESSIONS_DIR") || !strings.Contains(errs, "quotes") {
				t.Errorf("PI_SESSIONS_DIR=%s %s: exit %d, stdout %q, stderr %q; want exit 2 naming the variable and its quotes", root, args[0], code, brief(out), errs)
			}
		}
	}
	t.Setenv("PI_SESSIONS_DIR", "")
	code, out, errs := runCLI(t, "dump", "--etcd-endpoints", "http://127.0.0.1:1", "--transcripts-dir", `""`, "--log-format", "console")
	if code != exitUsage || out != "" || !strings.Contains(errs, "--transcripts-dir") || !strings.Contains(errs, "quotes") {
		t.Errorf(`--transcripts-dir '""': exit %d, stdout %q, stderr %q; want exit 2 naming the flag and its quotes`, code, brief(out), errs)
	}
	if names, _ := os.ReadDir(cwd); len(names) != 0 {
		t.Errorf("made in the working directory: %v", names)
	}
}

// A quote that opens a name and is never closed is no quoting of the
// whole (a shell would refuse the line; nothing removes it): the name is
// as written, a root walked and a job dir made like any other.
func TestAnUnclosedQuoteBeginningANameIsAName(t *testing.T) {
	clearEnv(t)
	root := copySample(t)
	t.Chdir(t.TempDir())
	for _, name := range []string{`'sessions`, `"sessions`, `sessions"`} {
		if err := os.Mkdir(name, 0o700); err != nil {
			t.Fatal(err)
		}
		if code, _, errs := runCLI(t, "dump", name, "--log-format", "console"); code != exitOK {
			t.Errorf("dump %s: exit %d, %s; want it walked", name, code, errs)
		}
		job := name + "-job"
		code, _, errs := runCLI(t, "resolve", "--sessions-dir", root, "--key", "4668107cac2e99b44415c5606b32ef14", "--job-dir", job, "--pi-version", "0.58.3", "--log-format", "console")
		if code != exitOK {
			t.Errorf("resolve --job-dir %s: exit %d, %s; want it made", job, code, errs)
		} else if _, err := os.Stat(filepath.Join(job, "session.ticket")); err != nil {
			t.Errorf("resolve --job-dir %s: %v", job, err)
		}
	}
}

// A variable's name begins with any letter or '_', and each of the
// letters at either end of the two ranges begins one: "$app", "$zone",
// "$App", "$Zone" are variables a shell would have expanded, refused as
// "$HOME" is.
func TestEveryLetterBeginsAVariable(t *testing.T) {
	clearEnv(t)
	t.Chdir(t.TempDir())
	for _, v := range []string{"app", "zone", "App", "Zone", "_x"} {
		root := "/var/lib/$" + v + "/sessions"
		code, out, errs := runCLI(t, "dump", root, "--log-format", "console")
		if code != exitUsage || out != "" || !strings.Contains(errs, "names a variable") {
			t.Errorf("dump %s: exit %d, stdout %q, stderr %q; want exit 2 naming the variable", root, code, brief(out), errs)
		}
	}
}
