package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"sessdb/internal/faults"
	"sessdb/internal/sample"
	"sessdb/store"
)

// The CLI contract of issue 12, command by command.

// cliChildEnv makes the re-executed test binary sessdb itself (TestMain),
// for the tests that need a real process: a real Ctrl-C, another uid.
const cliChildEnv = "SESSDB_TEST_CLI"

// cliClockEnv gives the re-executed sessdb (cliChildEnv) the test's clock,
// RFC 3339: a child judges at the instant its parent's commands do, not on
// the wall clock (TestMain).
const cliClockEnv = "SESSDB_TEST_CLI_CLOCK"

// cliProgressEnv makes such a child show its walk's progress on stderr,
// whatever stderr is: a test reads it to know that the walk has begun.
const cliProgressEnv = "SESSDB_TEST_CLI_PROGRESS"

// Flags and the positional argument go in any order; "--" ends the flags.
func TestFlagsGoAnywhere(t *testing.T) {
	atSampleTime(t)
	root := copySample(t)
	for _, pair := range [][2][]string{
		{{"dump", "--json", root}, {"dump", root, "--json"}},
		{{"dump", "--history", "3", "--wide", root}, {"dump", root, "--wide", "--history", "3"}},
		{{"check", "--json", root}, {"check", root, "--json"}},
		{{"reap", "--dry-run", "--json", root}, {"reap", root, "--json", "--dry-run"}},
		{{"migrate", "--dry-run", "--json", root}, {"migrate", root, "--dry-run", "--json"}},
	} {
		code1, out1, _ := runCLI(t, pair[0]...)
		code2, out2, errs := runCLI(t, pair[1]...)
		if code1 != exitOK || code2 != code1 || elapsed.ReplaceAllString(out1, "") != elapsed.ReplaceAllString(out2, "") {
			t.Errorf("%v: exit %d, %v: exit %d %s; want the same output", pair[0], code1, pair[1], code2, errs)
		}
	}
	// After "--", "--json" is the DIR.
	code, out, errs := runCLI(t, "dump", "--", "--json")
	if code != exitFault || out != "" || !strings.Contains(errs, "--json") {
		t.Errorf("dump -- --json: exit %d, %q %q", code, out, errs)
	}
	if code, _, errs := runCLI(t, "dump", root, root); code != exitUsage || !strings.Contains(errs, "unexpected argument") {
		t.Errorf("two DIRs: exit %d %s", code, errs)
	}
}

// migrate takes its root as every walk does: DIR, --sessions-dir or
// PI_SESSIONS_DIR, and the logging flags.
func TestMigrateTakesTheRootLikeTheOthers(t *testing.T) {
	for _, how := range []string{"arg", "flag", "env"} {
		clearEnv(t)
		root, _, _, _ := legacyRoot(t)
		args := []string{"migrate", "--dry-run", "--log-format", "json", "--log-level", "info"}
		switch how {
		case "arg":
			args = append(args, root)
		case "flag":
			args = append(args, "--sessions-dir", root)
		case "env":
			t.Setenv("PI_SESSIONS_DIR", root)
		}
		code, out, errs := runCLI(t, args...)
		if code != exitFault || !strings.Contains(out, "would run to-db over 3 entries") {
			t.Errorf("%s: exit %d\n%s%s", how, code, out, errs)
		}
		everyLineJSON(t, how, errs)
	}
	clearEnv(t)
	if code, _, errs := runCLI(t, "migrate"); code != exitUsage || !strings.Contains(errs, "sessions-dir-unset") {
		t.Errorf("no root: exit %d %s", code, errs)
	}
}

// everyLineJSON fails unless every line of s is a JSON object.
func everyLineJSON(t *testing.T, what, s string) {
	t.Helper()
	for _, l := range strings.Split(strings.TrimSuffix(s, "\n"), "\n") {
		var v map[string]any
		if l != "" && json.Unmarshal([]byte(l), &v) != nil {
			t.Errorf("%s: a stderr line is not JSON: %q", what, l)
		}
	}
}

// With --log-format json every stderr line is JSON, the error that ends
// the command included, and each failure is one line.
func TestJSONLogFormatForEveryLine(t *testing.T) {
	atSampleTime(t)
	root := copySample(t)
	notADir := filepath.Join(t.TempDir(), "file")
	os.WriteFile(notADir, []byte("x"), 0o600)
	damaged := copySample(t)
	damageSample(t, damaged)
	prev := interruptContext
	defer func() { interruptContext = prev }()
	for _, c := range []struct {
		args  []string
		code  int
		lines int
	}{
		{[]string{"dump", "--bogus", root}, exitUsage, 1},
		{[]string{"dump", "--history", "x", root}, exitUsage, 1},
		{[]string{"dump", "--ttl-days", "1.5", root}, exitUsage, 1},
		{[]string{"dump", filepath.Join(root, "nosuch")}, exitFault, 1},
		{[]string{"resolve", "--sessions-dir", notADir, "--key", sample.Resumable, "--job-dir", t.TempDir(), "--pi-version", "1"}, exitFault, 1},
		{[]string{"promote", "--sessions-dir", root, "--job-dir", t.TempDir(), "--pi-version", "1"}, exitFault, 1},
		{[]string{"reap", "--dry-run", damaged}, exitFault, 1},
		{[]string{"engage", "replay", filepath.Join(root, "README.txt")}, exitFault, 1},
		{[]string{"engage", "replay"}, exitUsage, 1},
		{[]string{"version", "extra"}, exitUsage, 1},
		{[]string{"nosuch"}, exitUsage, 1},
		{[]string{"dump", "interrupted", root}, exitInterrupted, 1},
	} {
		args := c.args
		if len(args) > 1 && args[1] == "interrupted" {
			interruptContext = cancelledContext
			args = []string{"dump", root}
		}
		code, out, errs := runCLI(t, append(args, "--log-format", "json")...)
		interruptContext = prev
		if code != c.code || strings.Count(errs, "\n") != c.lines {
			t.Errorf("%v: exit %d (want %d), %d stderr lines (want %d):\n%s%s", c.args, code, c.code, strings.Count(errs, "\n"), c.lines, out, errs)
		}
		everyLineJSON(t, strings.Join(c.args, " "), errs)
		var line struct {
			Level string
			Exit  *int
		}
		json.Unmarshal([]byte(errs), &line)
		if c.code != exitInterrupted && (line.Level != "error" || line.Exit == nil || *line.Exit != c.code) && c.args[0] != "reap" {
			t.Errorf("%v: %s; want level error and exit %d", c.args, errs, c.code)
		}
	}
	// The store's own events are JSON too.
	_, _, errs := runCLI(t, "reap", "--dry-run", "--log-level", "info", "--log-format", "json", "--ttl-days", "0", root)
	if !strings.Contains(errs, `"the TTL is 0`) {
		t.Errorf("no warning: %q", errs)
	}
	everyLineJSON(t, "reap --log-level info", errs)
}

// A command that fails prints nothing on stdout: no table header, no zero
// summary (issue 12: dump printed a header, reap a zero summary).
func TestAFailurePrintsNoHalfResult(t *testing.T) {
	clearEnv(t)
	file := filepath.Join(t.TempDir(), "file")
	os.WriteFile(file, []byte("x"), 0o600)
	missing := filepath.Join(t.TempDir(), "missing")
	for _, root := range []string{missing, file} {
		for _, args := range [][]string{{"dump"}, {"dump", "--json"}, {"dump", "--history", "3"}, {"check"}, {"check", "--json"}, {"reap"}, {"reap", "--json", "--dry-run"}, {"migrate"}, {"migrate", "--json"}} {
			code, out, errs := runCLI(t, append(args, root)...)
			if code != exitFault || out != "" || strings.Count(errs, "\n") != 1 {
				t.Errorf("%v on %s: exit %d, stdout %q, stderr %q; want exit 1, nothing on stdout, one line on stderr", args, filepath.Base(root), code, out, errs)
			}
		}
	}
}

// dump's table fits 160 columns with KEY and VERDICT first, however long
// what it shows; --wide shows every cell whole.
func TestDumpTableFits160Columns(t *testing.T) {
	atSampleTime(t)
	root := copySample(t)
	damageSample(t, root)
	long := strings.Repeat("x", 250)
	if err := os.Mkdir(filepath.Join(root, long), 0o700); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(root, sample.Legacy, "venue"), []byte(strings.Repeat("v", 200)), 0o600)
	for _, args := range [][]string{{"dump"}, {"dump", "--verify"}, {"dump", "--as-job", "--pi-version", "0.58.3", "--venue", "local"}, {"dump", "--history", "64"}} {
		code, out, errs := runCLI(t, append(args, root)...)
		if code != exitOK {
			t.Fatalf("%v: exit %d %s", args, code, errs)
		}
		history := len(args) > 1 && args[1] == "--history"
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		if !history && (!strings.HasPrefix(lines[0], "KEY  ") || !strings.HasPrefix(strings.Fields(lines[0])[1], "VERDICT")) {
			t.Errorf("%v: KEY and VERDICT do not come first: %q", args, lines[0])
		}
		for _, l := range lines {
			if n := utf8.RuneCountInString(l); n > dumpWidth {
				t.Errorf("%v: a line of %d columns: %q", args, n, l)
			}
		}
		if strings.Contains(out, "\nhistory") || history && strings.Contains(out, "VERDICT") {
			t.Errorf("%v: two tables on stdout:\n%s", args, out)
		}
	}
	_, out, _ := runCLI(t, "dump", "--wide", root)
	if !strings.Contains(out, long) || !strings.Contains(out, strings.Repeat("v", 200)) || !strings.Contains(out, "META") {
		t.Errorf("--wide cut a cell:\n%s", out)
	}
}

// A key a walk cannot read makes dump, check and reap exit 1 after the
// others, naming it on stderr (issue 12: dump and reap exited 0). The
// key dir is one the user running sessdb may not read: as root, sessdb
// runs as nobody in a child process.
func TestAnUnreadableKeyIsAFault(t *testing.T) {
	atSampleTime(t)
	base, err := os.MkdirTemp("", "sessdb-unreadable-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(filepath.Join(base, "sessions", sample.Resumable), 0o700); os.RemoveAll(base) })
	src := copySample(t)
	root := filepath.Join(base, "sessions")
	if err := os.Rename(src, root); err != nil {
		t.Fatal(err)
	}
	runAs := unprivileged(t, base, func() {
		filepath.Walk(root, func(p string, _ os.FileInfo, _ error) error { return os.Lchown(p, nobody, nobody) })
		os.Chown(filepath.Join(root, sample.Resumable), 0, 0)
	})
	os.Chmod(filepath.Join(root, sample.Resumable), 0)
	for _, c := range []struct {
		args   []string
		others string // what stdout says of the other keys
	}{
		{[]string{"dump"}, sample.LongChain + "  ?/resumed"},
		{[]string{"dump", "--json"}, `{"summary":{"entries":6,"keys":5,"failed":1,"interrupted":false}}`},
		// Two problems: the key is unreadable, and the user the root is
		// made for could not use it either: as root, where the key is
		// root's in nobody's root, owner; else its mode (0), mode.
		{[]string{"check"}, "checked 6 entries (5 keys): 2 problems, 2 notices; 1 not examined"},
		{[]string{"reap", "--dry-run"}, "would reap 1 key and 0 temp files; kept 3 keys, skipped 1, failed 1"},
	} {
		args := c.args
		code, out, errs := runAs(append(args, root)...)
		if code != exitFault || !strings.Contains(errs, sample.Resumable) || strings.Count(errs, "\n") != 1 || !strings.Contains(out, c.others) {
			t.Errorf("%v: exit %d; want 1, naming %s on stderr, the others on stdout\nstdout:\n%s\nstderr:\n%s", args, code, sample.Resumable, out, errs)
		}
	}
}

// nobody is the user unprivileged runs sessdb as.
const nobody = 65534

// unprivileged returns how a test runs sessdb as a user a mode-0 directory
// stops: as itself, or as root as nobody, in a child process (a copy of
// the test binary in base, which it opens to all), after chown hands
// nobody what the test made.
func unprivileged(t *testing.T, base string, chown func()) func(args ...string) (int, string, string) {
	if os.Geteuid() != 0 {
		return func(args ...string) (int, string, string) { return runCLI(t, args...) }
	}
	bin := filepath.Join(base, "sessdb.test")
	self, _ := os.Executable()
	data, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(bin, data, 0o755)
	os.Chmod(base, 0o755)
	chown()
	return func(args ...string) (int, string, string) {
		cmd := exec.Command(bin, append(args, "--log-format", "console")...)
		cmd.Env = append(os.Environ(), cliChildEnv+"=1", cliClockEnv+"="+clock().Format(time.RFC3339Nano), "PI_SESSIONS_DIR=")
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
		var out, errs strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errs
		err := cmd.Run()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatalf("%v: %v", args, err)
		}
		return cmd.ProcessState.ExitCode(), out.String(), errs.String()
	}
}

// Ctrl-C stops a migration cleanly: the keys under way finish, the run
// prints what it did with a summary marked interrupted and exits 130, and
// leaves no temp behind; a re-run finishes the rest.
func TestMigrateInterrupted(t *testing.T) {
	root := filepath.Join(t.TempDir(), "sessions")
	const n = 400
	for i := range n {
		dir := filepath.Join(root, store.Key("github", "acme/widget", fmt.Sprint("pi/issue-", i)))
		os.MkdirAll(dir, 0o700)
		os.WriteFile(filepath.Join(dir, "current.jsonl"), []byte(header), 0o600)
		os.WriteFile(filepath.Join(dir, "pi-version"), []byte("0.58.3"), 0o600)
		os.WriteFile(filepath.Join(dir, "venue"), []byte("local"), 0o600)
	}
	cmd := exec.Command(os.Args[0], "migrate", "--json", "--workers", "1", "--log-format", "console", root)
	cmd.Env = append(os.Environ(), cliChildEnv+"=1")
	stdout, _ := cmd.StdoutPipe()
	var errs strings.Builder
	cmd.Stderr = &errs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(stdout)
	first, err := r.ReadString('\n')
	if err != nil {
		t.Fatalf("no first report: %v %s", err, errs.String())
	}
	cmd.Process.Signal(os.Interrupt)
	rest, _ := io.ReadAll(r)
	cmd.Wait()
	lines := strings.Split(strings.TrimSpace(first+string(rest)), "\n")
	var last struct{ Summary map[string]any }
	json.Unmarshal([]byte(lines[len(lines)-1]), &last)
	if code := cmd.ProcessState.ExitCode(); code != exitInterrupted || last.Summary["interrupted"] != true ||
		last.Summary["entries"] != float64(len(lines)-1) || len(lines)-1 >= n || !strings.Contains(errs.String(), "interrupted after") {
		t.Fatalf("exit %d after %d of %d reports; want 130, a summary marked interrupted\nlast: %s\nstderr: %s", cmd.ProcessState.ExitCode(), len(lines)-1, n, lines[len(lines)-1], errs.String())
	}
	t.Logf("interrupted after %d of %d keys", len(lines)-1, n)
	if temps := metaTemps(t, root); len(temps) > 0 {
		t.Errorf("temps left: %v", temps)
	}
	clearEnv(t)
	if code, out, _ := runCLI(t, "check", root); code != exitOK {
		t.Errorf("check after the interrupt: exit %d\n%s", code, out)
	}
	if code, out, _ := runCLI(t, "migrate", root); code != exitOK || !strings.Contains(out, fmt.Sprintf("%d migrate, %d already", n-(len(lines)-1), len(lines)-1)) {
		t.Errorf("re-run: exit %d\n%s", code, out[max(0, len(out)-300):])
	}
}

// A second signal kills a walk that is slow to stop (docs/cli.md: "A
// second Ctrl-C kills the process at once"): a key under way waits for
// its lock up to the lock timeout, and the first signal only stops new
// keys from starting. SIGTERM, since a process started with SIGINT
// ignored (a background job of a script) keeps it ignored once the first
// is handled, as any Unix tool does.
func TestASecondSignalKillsAWalk(t *testing.T) {
	root := copySample(t)
	f, err := os.Open(filepath.Join(root, sample.Resumable, "meta.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "dump", "--json", "--log-format", "console", root)
	cmd.Env = append(os.Environ(), cliChildEnv+"=1", cliProgressEnv+"=1", "PI_SESSIONS_DIR=")
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The first progress report (a key before the locked one is done)
	// says the walk, and so its signal handling, has begun.
	r := bufio.NewReader(stderr)
	if _, err := r.ReadString('/'); err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("no progress: %v", err)
	}
	var errs strings.Builder
	done := make(chan error, 1)
	go func() { io.Copy(&errs, r); done <- cmd.Wait() }()
	// The locked key must be under way when the first signal lands: a
	// key not started yet is not started at all, and the walk then stops
	// at once, with a walk's exit status, as it should. The report comes
	// before the next key is taken, so wait for the walk to hold the
	// locked meta.db open (it does for the whole lock wait).
	waitForOpen(t, cmd.Process.Pid, f.Name())
	start := time.Now()
	// Only a hang's bound: a walk that ignores the signals after the
	// first stops by itself once the locked key's 2 s lock wait ends,
	// with a walk's exit status, which the check below fails.
	deadline := time.After(10 * time.Second)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
			ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
			if !ws.Signaled() || ws.Signal() != syscall.SIGTERM {
				t.Fatalf("exit %d after %v: want killed by the second SIGTERM\n%s", cmd.ProcessState.ExitCode(), time.Since(start), errs.String())
			}
			return
		case <-deadline:
			cmd.Process.Kill()
			<-done
			t.Fatalf("still running %v after the first SIGTERM, the signals after it ignored", time.Since(start))
		case <-tick.C:
		}
	}
}

// waitForOpen waits until process pid holds name open (read from
// /proc/pid/fd; where there is no /proc, a pause stands in for it), for
// at most the lock wait a locked key takes (2 s).
func waitForOpen(t *testing.T, pid int, name string) {
	t.Helper()
	fds := fmt.Sprintf("/proc/%d/fd", pid)
	if _, err := os.Stat(fds); err != nil {
		time.Sleep(200 * time.Millisecond)
		return
	}
	want, err := filepath.EvalSymlinks(name)
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		ents, _ := os.ReadDir(fds)
		for _, e := range ents {
			if l, err := os.Readlink(filepath.Join(fds, e.Name())); err == nil && l == want {
				return
			}
		}
	}
	t.Fatalf("the walk never opened %s", name)
}

// metaTemps lists the meta.db temps under root.
func metaTemps(t *testing.T, root string) []string {
	var out []string
	filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err == nil && strings.HasPrefix(fi.Name(), ".meta.db.tmp-") {
			out = append(out, p)
		}
		return nil
	})
	return out
}

// A meta.db temp a killed run left is removed by the next run, under the
// key's lock; one being made right now (its flock held) is left.
func TestMigrateRemovesATempAKillLeft(t *testing.T) {
	clearEnv(t)
	root, plain, odd, _ := legacyRoot(t)
	left := filepath.Join(root, plain, ".meta.db.tmp-00000000deadbeef")
	busy := filepath.Join(root, odd, ".meta.db.tmp-00000000feedface")
	os.WriteFile(left, []byte("half a meta.db"), 0o600)
	os.WriteFile(busy, nil, 0o600)
	// A temp written within the last minute may be a creation between its
	// flock and its link: left alone. These two are older.
	old := time.Now().Add(-2 * time.Hour)
	os.Chtimes(left, old, old)
	os.Chtimes(busy, old, old)
	f, err := os.Open(busy)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runCLI(t, "migrate", "--json", root)
	if code != exitFault { // the legacy root's third key is locked
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	if _, err := os.Stat(left); !os.IsNotExist(err) {
		t.Errorf("the temp a kill left is still there: %v", err)
	}
	if !strings.Contains(out, `"removed":[`) || !strings.Contains(out, ".meta.db.tmp-00000000deadbeef") {
		t.Errorf("the report does not say it was removed:\n%s", out)
	}
	if _, err := os.Stat(busy); err != nil {
		t.Errorf("a temp whose flock is held was removed: %v", err)
	}
	// A fresh one is left whatever its flock: it may be a creation
	// between its flock and its link.
	fresh := filepath.Join(root, plain, ".meta.db.tmp-00000000000f2e54")
	os.WriteFile(fresh, nil, 0o600)
	runCLI(t, "migrate", root)
	if _, err := os.Stat(fresh); err != nil {
		t.Errorf("a fresh temp was removed: %v", err)
	}
	unix.Flock(int(f.Fd()), unix.LOCK_UN)
	runCLI(t, "migrate", root)
	if _, err := os.Stat(busy); !os.IsNotExist(err) {
		t.Errorf("a free temp is still there after the next run: %v", err)
	}
}

// stderr's JSON lines are terminal-safe as stdout's are: a C1 control
// (U+009B is a one-character CSI) or a bidi override from what an operator
// gave (a path, a variable's name) is written \uXXXX, never raw, and
// decodes back to the same text.
func TestStderrJSONIsTerminalSafe(t *testing.T) {
	clearEnv(t)
	hostile := "x\u202eoops\u009b\u2028"
	// (A root's name may not end in U+2028, white space: hence the "end".)
	root := filepath.Join(t.TempDir(), hostile+"end")
	t.Setenv("PI_SESSION_"+hostile, "1")
	code, _, errs := runCLI(t, "dump", root, "--log-format", "json")
	if code != exitFault || strings.Count(errs, "\n") != 2 {
		t.Fatalf("dump of a missing root: exit %d, stderr %q; want exit 1, a warning and an error", code, errs)
	}
	for _, r := range errs {
		if r >= 0x7f && unprintable(r) {
			t.Errorf("stderr carries %U raw: %q", r, errs)
		}
	}
	for _, l := range strings.Split(strings.TrimSuffix(errs, "\n"), "\n") {
		var v struct{ Message string }
		if err := json.Unmarshal([]byte(l), &v); err != nil || !strings.Contains(v.Message, hostile) {
			t.Errorf("a stderr line does not decode to the text it names: %q (%v)", l, err)
		}
	}
}

// A line about one key names it in its key field: a resolve that fails
// and a promote-failed carried "key":null. On the console the key is not
// said twice (the store's error names it already).
func TestFaultLinesNameTheirKey(t *testing.T) {
	clearEnv(t)
	defer faults.Set(nil)
	// A root that exists: a promote that makes the root warns of it, a
	// line of its own (TestPromoteWarnsWhenItMakesTheSessionsRoot), and a
	// resolve of a missing root warns too.
	root := filepath.Join(t.TempDir(), "sessions")
	if err := os.Mkdir(root, 0o700); err != nil {
		t.Fatal(err)
	}
	key := strings.Repeat("c", 32)
	job := t.TempDir()
	resolve := func(job string) []string {
		return []string{"resolve", "--sessions-dir", root, "--key", key, "--job-dir", job, "--pi-version", "0.58.3"}
	}
	if code, _, errs := runCLI(t, resolve(job)...); code != exitOK {
		t.Fatalf("resolve: %s", errs)
	}
	os.WriteFile(filepath.Join(job, "session", "current.jsonl"), []byte(header), 0o600)
	for _, c := range []struct {
		at   faults.Point
		args []string
		code int
	}{
		{faults.PromoteAfterTempWrite, []string{"promote", "--sessions-dir", root, "--job-dir", job, "--pi-version", "0.58.3"}, exitOK},
		{faults.ResolveAfterGates, resolve(t.TempDir()), exitFault},
	} {
		faults.Set(func(p faults.Point) error {
			if p == c.at {
				return syscall.EIO
			}
			return nil
		})
		code, _, errs := runCLI(t, append(c.args, "--log-format", "json")...)
		var line struct{ Key *string }
		if code != c.code || strings.Count(errs, "\n") != 1 || json.Unmarshal([]byte(errs), &line) != nil || line.Key == nil || *line.Key != key {
			t.Errorf("%s: exit %d, stderr %q; want exit %d and one line with key %s", c.at, code, errs, c.code, key)
		}
		if _, _, errs = runCLI(t, append(c.args, "--log-format", "console")...); strings.Count(errs, key) != 1 {
			t.Errorf("%s, console: %q; want the key said once", c.at, errs)
		}
	}
}

// A fleet's key dir that reap and check cannot read is reported, and the
// others are still swept and checked: it stopped the whole sweep (reap
// swept nothing, check examined nothing, each exiting 1 with the one
// dir's error).
func TestFleetUnreadableKeyDirIsReportedAndTheRestSwept(t *testing.T) {
	startFleet(t)
	base, err := os.MkdirTemp("", "sessdb-fleet-unreadable-")
	if err != nil {
		t.Fatal(err)
	}
	locked, other := store.Key("github", "acme/widget", "locked"), store.Key("github", "acme/widget", "other")
	dir := filepath.Join(base, "transcripts")
	t.Cleanup(func() { os.Chmod(filepath.Join(dir, locked), 0o700); os.RemoveAll(base) })
	t.Setenv("PI_SESSIONS_TRANSCRIPTS_DIR", dir)
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	markDir(t)
	orphan := filepath.Join(dir, other, "0000000000000001-0123456789abcdef.jsonl")
	for _, key := range []string{locked, other} {
		if err := os.MkdirAll(filepath.Join(dir, key), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(orphan, []byte(header), 0o600)
	old := time.Now().Add(-2 * time.Hour)
	os.Chtimes(orphan, old, old)
	runAs := unprivileged(t, base, func() {
		filepath.Walk(dir, func(p string, _ os.FileInfo, _ error) error { return os.Lchown(p, nobody, nobody) })
		os.Chown(filepath.Join(dir, locked), 0, 0)
	})
	os.Chmod(filepath.Join(dir, locked), 0)
	code, out, errs := runAs("check")
	if code != exitFault || !strings.Contains(errs, locked) || !strings.Contains(out, locked+": unreadable") || !strings.Contains(out, other+"/0000000000000001-0123456789abcdef.jsonl: orphan") {
		t.Errorf("check: exit %d; want exit 1, the unreadable key named on stderr and reported, the other's orphan reported\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	code, out, errs = runAs("reap")
	if _, err := os.Lstat(orphan); code != exitFault || !strings.Contains(errs, locked) || !os.IsNotExist(err) {
		t.Errorf("reap: exit %d, the other key's orphan: %v; want exit 1 naming the unreadable key, the orphan removed\nstdout:\n%s\nstderr:\n%s", code, err, out, errs)
	}
}

// A sessions root whose parent the worker may pass through but not list
// (mode 0711, a shared home dir's usual mode) takes first promotions: the
// store needs no read of a dir it did not make. As root, sessdb runs as
// nobody in a child process.
func TestFirstPromotionUnderAnUnlistableParent(t *testing.T) {
	base, err := os.MkdirTemp("", "sessdb-unlistable-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	parent := filepath.Join(base, "home")
	root, job := filepath.Join(parent, "sessions"), filepath.Join(base, "job")
	for _, d := range []string{root, job} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	runAs := unprivileged(t, base, func() {
		os.Chown(root, nobody, nobody)
		os.Chown(job, nobody, nobody)
	})
	os.Chmod(parent, 0o711)
	const key = "0123456789abcdef0123456789abcdef"
	code, out, errs := runAs("resolve", "--sessions-dir", root, "--key", key, "--job-dir", job, "--pi-version", "1")
	var r resolveOutput
	if code != exitOK || json.Unmarshal([]byte(out), &r) != nil {
		t.Fatalf("resolve: exit %d %s %s", code, out, errs)
	}
	if err := os.WriteFile(r.Staged, []byte(header), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errs = runAs("promote", "--sessions-dir", root, "--job-dir", job, "--pi-version", "1")
	var p promoteResult
	if code != exitOK || json.Unmarshal([]byte(out), &p) != nil || !p.Promoted {
		t.Fatalf("promote: exit %d %s %s", code, out, errs)
	}
}
