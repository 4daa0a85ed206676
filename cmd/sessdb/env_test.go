package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sessdb/store"
)

// A relative sessions root is taken from the working directory of each
// command, and the ticket records it absolute: a worker that changes
// directory between its resolve and its promote, with the same relative
// PI_SESSIONS_DIR, is refused (exit 2) wherever it now names another
// directory, one that exists or one that does not (which is not made),
// and promotes from where it resolved.
func TestRelativeRootIsTheResolvesDirectory(t *testing.T) {
	clearEnv(t)
	here, elsewhere, nowhere := t.TempDir(), t.TempDir(), t.TempDir()
	for _, d := range []string{here, elsewhere} {
		os.Mkdir(filepath.Join(d, "sessions"), 0o700)
	}
	job := t.TempDir()
	key := strings.Repeat("b", 32)
	t.Setenv("PI_SESSIONS_DIR", "sessions")
	t.Chdir(here)
	if code, _, errs := runCLI(t, "resolve", "--key", key, "--job-dir", job, "--pi-version", "1"); code != exitOK {
		t.Fatal(errs)
	}
	if s, err := store.ReadTicket(job); err != nil || s.Root != filepath.Join(here, "sessions") {
		t.Fatalf("the ticket's root is %q (%v); want %s, absolute", s.Root, err, filepath.Join(here, "sessions"))
	}
	os.WriteFile(filepath.Join(job, "session", "current.jsonl"), []byte(header), 0o600)
	for _, d := range []string{elsewhere, nowhere} {
		t.Chdir(d)
		code, out, errs := runCLI(t, "promote", "--job-dir", job, "--pi-version", "1")
		if code != exitUsage || out != "" || !strings.Contains(errs, "another sessions root") {
			t.Errorf("promote from %s: exit %d, %s%s; want exit 2, another sessions root", d, code, out, errs)
		}
		names, _ := os.ReadDir(filepath.Join(d, "sessions"))
		if _, err := os.Stat(filepath.Join(d, "sessions")); len(names) > 0 || d == nowhere && err == nil {
			t.Errorf("promote from %s wrote there: %v", d, names)
		}
	}
	t.Chdir(here)
	if code, out, errs := runCLI(t, "promote", "--job-dir", job, "--pi-version", "1"); code != exitOK || !strings.Contains(out, `"promoted":true`) {
		t.Errorf("promote from where it resolved: exit %d, %s%s", code, out, errs)
	}
}

// An environment block may hold a variable twice (a worker that appends
// its own value to the environment it inherited and execs it raw): the
// first wins, as C's getenv takes it, in every variable sessdb reads (Go's
// os.Getenv keeps the first and drops the others), and an empty first one
// is unset whatever follows. A language's own environment API (a Python
// dict, Go's exec.Cmd) passes one value, its last.
func TestDuplicatedVariableFirstWins(t *testing.T) {
	first, second := filepath.Join(t.TempDir(), "sessions"), filepath.Join(t.TempDir(), "sessions")
	os.Mkdir(first, 0o700)
	os.Mkdir(second, 0o700)
	job := t.TempDir()
	errf, stderr := captured(t)
	args := []string{"resolve", "--key", strings.Repeat("c", 32), "--job-dir", job, "--pi-version", "1", "--log-format", "console"}
	ws := childRun(t, "/", []string{"PI_SESSIONS_DIR=" + first, "PI_SESSIONS_DIR=" + second}, nil, errf, args...)
	if s, err := store.ReadTicket(job); ws.ExitStatus() != exitOK || err != nil || s.Root != first {
		t.Errorf("resolve with PI_SESSIONS_DIR twice: exit %d, %s, root %q (%v); want the first, %s", ws.ExitStatus(), stderr(), s.Root, err, first)
	}
	errf, stderr = captured(t)
	ws = childRun(t, "/", []string{"PI_SESSIONS_DIR=", "PI_SESSIONS_DIR=" + second}, nil, errf, args...)
	if ws.ExitStatus() != exitUsage || !strings.Contains(stderr(), "sessions-dir-unset") {
		t.Errorf("resolve with PI_SESSIONS_DIR empty, then set: exit %d, %s; want exit 2, sessions-dir-unset", ws.ExitStatus(), stderr())
	}
}

// A variable set to the empty string is unset, every one sessdb reads: the
// default, not a zero (PI_SESSIONS_TTL_DAYS= is 14 days, not "keep
// forever"), no fleet, no requirement, no models file.
func TestEmptyVariableIsUnset(t *testing.T) {
	for _, v := range knownEnv() {
		t.Setenv(v, "") // restored after the test
		os.Unsetenv(v)
	}
	root := copySample(t)
	args := []string{"dump", "--json", "--at", "2026-11-29T10:00:00Z", root}
	_, want, _ := runCLI(t, args...)
	for _, v := range knownEnv() {
		t.Setenv(v, "")
		if code, out, errs := runCLI(t, args...); code != exitOK || out != want || errs != "" {
			t.Errorf("%s set empty: exit %d, %s; want what unset gives", v, code, errs)
		}
	}
	t.Setenv("PI_SESSIONS_TTL_DAYS", "0")
	if _, out, _ := runCLI(t, args...); out == want {
		t.Fatal("PI_SESSIONS_TTL_DAYS=0 changes nothing on the sample: the test tells nothing")
	}
}
