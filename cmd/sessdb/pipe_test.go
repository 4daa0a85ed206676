package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"sessdb/store"
)

// childRun runs sessdb (the test binary, as TestMain makes it) with args in
// dir, its environment env (nothing inherited but what is given), and
// stdout and stderr as given: a nil one is closed in the child, as a
// shell's >&- closes it. It returns the child's wait status.
func childRun(t *testing.T, dir string, env []string, stdout, stderr *os.File, args ...string) syscall.WaitStatus {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// Under -race a child that exits 0 sleeps a second first, unless told
	// not to.
	env = append([]string{cliChildEnv + "=1", "GORACE=atexit_sleep_ms=0"}, env...)
	p, err := os.StartProcess(exe, append([]string{exe}, args...), &os.ProcAttr{Dir: dir, Env: env, Files: []*os.File{nil, stdout, stderr}})
	if err != nil {
		t.Fatal(err)
	}
	st, err := p.Wait()
	if err != nil {
		t.Fatal(err)
	}
	return st.Sys().(syscall.WaitStatus)
}

// brokenPipe is the write end of a pipe whose reader is gone.
func brokenPipe(t *testing.T) *os.File {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	t.Cleanup(func() { w.Close() })
	return w
}

// captured is a file the child writes to; read returns what it holds.
func captured(t *testing.T) (*os.File, func() string) {
	t.Helper()
	f, err := os.CreateTemp(t.TempDir(), "out-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f, func() string {
		b, _ := os.ReadFile(f.Name())
		return string(b)
	}
}

// A migration whose stdout's reader goes away (sessdb migrate --json |
// head -1, a log shipper that died) must stop as an interrupt stops it:
// the keys under way finish, none is left half converted with its meta.db
// temp beside it, and the exit status says the run did not complete. It
// is the one command that changes the root while it prints; killed by
// SIGPIPE mid-key it left .meta.db.tmp-* files that check reports as
// problems until a later run, a minute on, sweeps them.
func TestMigrateToAGoneReaderStopsCleanly(t *testing.T) {
	root := filepath.Join(t.TempDir(), "sessions")
	const n = 24
	for i := range n {
		dir := filepath.Join(root, store.Key("github", "acme/widget", fmt.Sprint("pi/issue-", i)))
		os.MkdirAll(dir, 0o700)
		os.WriteFile(filepath.Join(dir, "current.jsonl"), []byte(header), 0o600)
		os.WriteFile(filepath.Join(dir, "pi-version"), []byte("0.58.3"), 0o600)
	}
	os.Chmod(root, 0o700)
	errf, stderr := captured(t)
	ws := childRun(t, "/", nil, brokenPipe(t), errf, "migrate", "--json", "--workers", "4", "--log-format", "console", root)
	if ws.Signaled() || ws.ExitStatus() != exitFault || !strings.Contains(stderr(), "broken pipe") || !strings.Contains(stderr(), "run migrate again") {
		t.Fatalf("migrate to a gone reader: %v (signaled %v), stderr %q; want exit 1 naming the broken pipe, not a death by SIGPIPE", ws.ExitStatus(), ws.Signaled(), stderr())
	}
	if temps := metaTemps(t, root); len(temps) > 0 {
		t.Errorf("temps left: %v", temps)
	}
	if code, out, errs := runCLI(t, "check", root); code != exitOK {
		t.Errorf("check after the stopped migration: exit %d\n%s%s", code, out, errs)
	}
	if code, out, errs := runCLI(t, "migrate", root); code != exitOK || !strings.Contains(out, fmt.Sprintf("over %d entries", n)) {
		t.Errorf("the re-run: exit %d\n%s%s", code, out, errs)
	}
}

// reap and check --repair change the root as they walk, and write on
// stderr as they go (a key they could not do, --log-level info's events):
// a stderr whose reader is gone (a log shipper that died) must not kill
// them at the first line, every run, before the keys after it are done.
// The lines are lost; the work and the report on stdout are not.
func TestRepairsSurviveAGoneStderrReader(t *testing.T) {
	for _, c := range []struct {
		args    []string
		summary string
	}{
		{[]string{"reap", "--ttl-days", "0"}, "reaped 0 keys and 3 temp files"}, // a warning first: the TTL is 0
		{[]string{"check", "--repair"}, "checked 3 entries"},
	} {
		args := c.args
		t.Run(args[0], func(t *testing.T) {
			root := filepath.Join(t.TempDir(), "sessions")
			var temps []string
			for i := range 3 {
				key := store.Key("github", "acme/widget", fmt.Sprint("pi/issue-", i))
				dir := filepath.Join(root, key)
				os.MkdirAll(dir, 0o700)
				os.WriteFile(filepath.Join(dir, "current.jsonl"), []byte(header), 0o600)
				os.WriteFile(filepath.Join(dir, "pi-version"), []byte("0.58.3"), 0o600)
				tmp := filepath.Join(dir, ".current.jsonl.tmp-0123456789abcdef")
				os.WriteFile(tmp, []byte("a killed promotion's"), 0o600)
				old := time.Now().Add(-3 * time.Hour)
				os.Chtimes(tmp, old, old)
				temps = append(temps, tmp)
			}
			os.Chmod(root, 0o700)
			outf, stdout := captured(t)
			ws := childRun(t, "/", nil, outf, brokenPipe(t), append(args, "--log-level", "info", "--log-format", "json", root)...)
			if ws.Signaled() || ws.ExitStatus() != exitOK || !strings.Contains(stdout(), c.summary) {
				t.Errorf("%s with a gone stderr reader: exit %d (signaled %v: %v), stdout %q; want exit 0 and the whole report", args[0], ws.ExitStatus(), ws.Signaled(), ws.Signal(), stdout())
			}
			for _, tmp := range temps {
				if _, err := os.Lstat(tmp); err == nil {
					t.Errorf("%s left %s", args[0], tmp)
				}
			}
		})
	}
}

// promote logs the promotion (--log-level info) after it lands and before
// it answers: killed by SIGPIPE there, with its stderr's reader gone, it
// died after every retry too, and the answer could never be read. Its
// stderr lines are lost now, its answer is not. A stdout whose reader is
// gone is an answer not written: exit 1, the line saying what was done.
func TestPromoteAnswersWhateverItsStderr(t *testing.T) {
	clearEnv(t)
	root := filepath.Join(t.TempDir(), "sessions")
	os.Mkdir(root, 0o700)
	job := t.TempDir()
	if code, _, errs := runCLI(t, "resolve", "--sessions-dir", root, "--key", strings.Repeat("f", 32), "--job-dir", job, "--pi-version", "1"); code != exitOK {
		t.Fatal(errs)
	}
	os.WriteFile(filepath.Join(job, "session", "current.jsonl"), []byte(header), 0o600)
	env := []string{"PI_SESSIONS_DIR=" + root}
	args := []string{"promote", "--job-dir", job, "--pi-version", "1", "--log-level", "info", "--log-format", "console"}

	outf, stdout := captured(t)
	ws := childRun(t, "/", env, outf, brokenPipe(t), args...)
	if ws.Signaled() || ws.ExitStatus() != exitOK || !strings.Contains(stdout(), `"promoted":true,"reason":"promoted","bytes":`) {
		t.Errorf("promote with a gone stderr reader: exit %d (signaled %v), stdout %q; want exit 0 and the answer", ws.ExitStatus(), ws.Signaled(), stdout())
	}
	errf, stderr := captured(t)
	ws = childRun(t, "/", env, brokenPipe(t), errf, args...)
	if ws.Signaled() || ws.ExitStatus() != exitFault || !strings.Contains(stderr(), "promoted gen 1 (a repeat), but the answer was not written on stdout") || !strings.Contains(stderr(), "broken pipe") {
		t.Errorf("promote with a gone stdout reader: exit %d (signaled %v), stderr %q; want exit 1 and the line saying what was done", ws.ExitStatus(), ws.Signaled(), stderr())
	}
}

// A stdout closed with >&- is /dev/null to a Go program (the runtime
// reopens it there before main, and nothing tells the two apart after):
// resolve and promote succeed as with >/dev/null, their work done, and a
// caller that acts on the answer must read it (docs/json.md). The
// promotion made so is read back by a retry, as a repeat.
func TestClosedStdoutIsDevNull(t *testing.T) {
	clearEnv(t)
	root := filepath.Join(t.TempDir(), "sessions")
	os.Mkdir(root, 0o700)
	job, job2 := t.TempDir(), t.TempDir()
	key := strings.Repeat("a", 32)
	if code, _, errs := runCLI(t, "resolve", "--sessions-dir", root, "--key", key, "--job-dir", job, "--pi-version", "1"); code != exitOK {
		t.Fatal(errs)
	}
	os.WriteFile(filepath.Join(job, "session", "current.jsonl"), []byte(header), 0o600)
	env := []string{"PI_SESSIONS_DIR=" + root}
	for _, args := range [][]string{
		{"promote", "--job-dir", job, "--pi-version", "1"},
		{"resolve", "--key", key, "--job-dir", job2, "--pi-version", "1"},
	} {
		errf, stderr := captured(t)
		if ws := childRun(t, "/", env, nil, errf, args...); ws.Signaled() || ws.ExitStatus() != exitOK || stderr() != "" {
			t.Errorf("%s with stdout closed: exit %d (signaled %v), stderr %q; want exit 0, as with >/dev/null", args[0], ws.ExitStatus(), ws.Signaled(), stderr())
		}
	}
	if code, out, errs := runCLI(t, "promote", "--sessions-dir", root, "--job-dir", job, "--pi-version", "1"); code != exitOK || !strings.Contains(out, `"gen":1,"run":"unanswered","repeat":true`) {
		t.Errorf("promote after the one with stdout closed: exit %d, %s%s; want the repeat of gen 1", code, out, errs)
	}
	if s, err := store.ReadTicket(job2); err != nil || s.Key != key || !s.Resume {
		t.Errorf("resolve with stdout closed left ticket %+v, %v; want its resumed ticket", s, err)
	}
}

// A stdout whose reader is gone ends a read-only command by SIGPIPE (a
// shell's 141) with nothing on stderr, as it ends any Unix tool, and a
// command that writes the store with exit 1 and a line naming it, its work
// done (docs/cli.md, the note under the exit status table). promote and
// migrate have tests of their own. Help is read-only, asked of any command.
func TestGoneStdoutReaderByKind(t *testing.T) {
	clearEnv(t)
	root := filepath.Join(t.TempDir(), "sessions")
	os.Mkdir(root, 0o700)
	env := []string{"PI_SESSIONS_DIR=" + root}
	for _, c := range []struct {
		args   []string
		writes bool
	}{
		{[]string{"resolve", "--key", strings.Repeat("a", 32), "--job-dir", t.TempDir(), "--pi-version", "1"}, true},
		{[]string{"check", root}, true},
		{[]string{"reap", root}, true},
		{[]string{"dump", root}, false},
		{[]string{"version"}, false},
		// A help text is read-only whichever command's it is: "sessdb
		// resolve -h" as "sessdb help resolve".
		{[]string{"resolve", "-h"}, false},
		{[]string{"migrate", "--help"}, false},
	} {
		errf, stderr := captured(t)
		ws := childRun(t, "/", env, brokenPipe(t), errf, append(c.args, "--log-format", "console")...)
		switch {
		case c.writes && (ws.Signaled() || ws.ExitStatus() != exitFault || !strings.Contains(stderr(), "broken pipe")):
			t.Errorf("%s to a gone reader: exit %d (signaled %v), stderr %q; want exit 1 naming the broken pipe", c.args[0], ws.ExitStatus(), ws.Signaled(), stderr())
		case !c.writes && (!ws.Signaled() || ws.Signal() != syscall.SIGPIPE || stderr() != ""):
			t.Errorf("%s to a gone reader: exit %d (signaled %v), stderr %q; want death by SIGPIPE, nothing on stderr", c.args[0], ws.ExitStatus(), ws.Signaled(), stderr())
		}
	}
}

// A reap or a check --repair whose report cannot be written (its reader
// gone, a full disk) has done its work: a key removed, a temp removed. It
// exits 1 saying only 'write: ... broken pipe', and the removals, gone for
// good, went unsaid: what docs/json.md promises of a reap that fails after
// it removed something (each removal named on stderr) held only for a
// failure before the report. Each is named now.
func TestRemovalsNamedWhenTheReportIsNotWritten(t *testing.T) {
	clearEnv(t)
	for _, c := range []struct {
		args []string
		want func(key, temp string) []string
	}{
		{[]string{"reap"}, func(key, temp string) []string {
			return []string{"removed " + key + ", but the report was not written on stdout", "removed " + temp + ", but the report was not written on stdout"}
		}},
		{[]string{"check", "--repair"}, func(key, temp string) []string {
			return []string{"repaired " + temp + ", but the report was not written on stdout: removed"}
		}},
		// A worker's quiet setting: the JSON lines a log shipper reads,
		// errors only. The removals are part of the failure's report.
		{[]string{"reap", "--log-level", "error", "--log-format", "json"}, func(key, temp string) []string {
			return []string{`"message":"removed ` + key + `, but the report was not written on stdout"`}
		}},
	} {
		t.Run(c.args[0], func(t *testing.T) {
			root := filepath.Join(t.TempDir(), "sessions")
			old := time.Now().Add(-30 * 24 * time.Hour)
			plant := func(name string, age time.Time) {
				p := filepath.Join(root, name)
				os.MkdirAll(filepath.Dir(p), 0o700)
				os.WriteFile(p, []byte(header), 0o600)
				os.Chtimes(p, age, age)
			}
			expired := store.Key("github", "acme/widget", "old")
			plant(expired+"/current.jsonl", old)
			plant(expired+"/pi-version", old)
			live := store.Key("github", "acme/widget", "live")
			plant(live+"/current.jsonl", time.Now())
			plant(live+"/pi-version", time.Now())
			temp := live + "/.current.jsonl.tmp-0123456789abcdef"
			plant(temp, time.Now().Add(-3*time.Hour))
			os.Chmod(root, 0o700)
			errf, stderr := captured(t)
			args := c.args
			if !slices.Contains(args, "--log-format") {
				args = append(args, "--log-format", "console")
			}
			ws := childRun(t, "/", nil, brokenPipe(t), errf, append(args, root)...)
			if ws.Signaled() || ws.ExitStatus() != exitFault || !strings.Contains(stderr(), "broken pipe") {
				t.Fatalf("%s to a gone reader: exit %d (signaled %v), stderr %q", c.args[0], ws.ExitStatus(), ws.Signaled(), stderr())
			}
			if _, err := os.Lstat(filepath.Join(root, temp)); err == nil {
				t.Fatalf("%s did not remove the temp; stderr %q", c.args[0], stderr())
			}
			for _, w := range c.want(expired, temp) {
				if !strings.Contains(stderr(), w) {
					t.Errorf("%s: stderr %q; want %q", c.args[0], stderr(), w)
				}
			}
		})
	}
}
