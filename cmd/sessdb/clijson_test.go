package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"sessdb/fleet/etcdmeta"
)

// A sessions root whose name begins or ends with white space is a quoting
// mistake in a worker's environment (PI_SESSIONS_DIR=' ', an env file's
// trailing blank): taken as given, it is a relative directory made in the
// worker's working directory, or another root beside the real one, and
// every key is absent there while promote fills it. It is a configuration
// error naming the variable or flag, exit 2, nothing written anywhere.
func TestSessionsRootWithWhiteSpaceIsAnError(t *testing.T) {
	clearEnv(t)
	cwd := t.TempDir()
	t.Chdir(cwd)
	real := filepath.Join(t.TempDir(), "sessions")
	key := strings.Repeat("d1", 16)
	for _, c := range []struct {
		env, flag, name string
	}{
		{env: " ", name: "PI_SESSIONS_DIR"},
		{env: "\t", name: "PI_SESSIONS_DIR"},
		{env: real + " ", name: "PI_SESSIONS_DIR"},
		{env: real + "\n", name: "PI_SESSIONS_DIR"},
		{flag: " " + real, name: "--sessions-dir"},
		{flag: "\u00a0", name: "--sessions-dir"},
	} {
		t.Setenv("PI_SESSIONS_DIR", c.env)
		job := filepath.Join(t.TempDir(), "job")
		args := []string{"resolve", "--key", key, "--job-dir", job, "--pi-version", "1"}
		if c.flag != "" {
			args = append(args, "--sessions-dir", c.flag)
		}
		for _, a := range [][]string{args, {"promote", "--job-dir", job, "--pi-version", "1"}, {"dump", "--json"}, {"reap", "--json"}} {
			if c.flag != "" && a[0] != "resolve" {
				a = append(a, "--sessions-dir", c.flag)
			}
			if a[0] == "promote" {
				// What pi would leave, had resolve staged anything.
				os.WriteFile(filepath.Join(job, "session", "current.jsonl"), []byte(header), 0o600)
			}
			code, out, errs := runCLI(t, a...)
			if code != exitUsage || out != "" || !strings.Contains(errs, c.name) || strings.Count(errs, "\n") != 1 {
				t.Errorf("%s %q, %s: exit %d, stdout %q, stderr %q; want exit 2, nothing on stdout, one line naming %s", c.name, c.env+c.flag, a[0], code, out, errs, c.name)
			}
		}
		if _, err := os.Lstat(job); err == nil {
			t.Errorf("%s %q: resolve made the job dir", c.name, c.env+c.flag)
		}
	}
	if ents, _ := os.ReadDir(cwd); len(ents) != 0 {
		t.Errorf("the working directory holds %v; want nothing made there", ents)
	}
	if _, err := os.Lstat(real + " "); err == nil {
		t.Errorf("a root %q was made beside the real one", real+" ")
	}
}

// A signal kills resolve and promote as it kills any Unix tool (they are
// not walks, which stop cleanly): a worker sees the signal (its shell
// 128 + the signal, 143 for SIGTERM; Python a returncode of -15), nothing
// on stdout, and the store as a crash leaves it; the same command run
// again gives the documented result. Here a promote waiting on the key's
// lock is sent SIGTERM: it dies of it, the key is unchanged, and the same
// ticket then promotes, and once more repeats.
func TestSignalKillsPromoteAndTheRetryPromotes(t *testing.T) {
	clearEnv(t)
	root := filepath.Join(t.TempDir(), "sessions")
	key := strings.Repeat("d2", 16)
	t.Setenv("PI_SESSIONS_DIR", root)
	first, job := filepath.Join(t.TempDir(), "first"), filepath.Join(t.TempDir(), "job")
	for _, j := range []string{first, job} {
		if code, _, errs := runCLI(t, "resolve", "--key", key, "--job-dir", j, "--pi-version", "1"); code != exitOK {
			t.Fatalf("resolve: %s", errs)
		}
		os.WriteFile(filepath.Join(j, "session", "current.jsonl"), []byte(header), 0o600)
	}
	// The first job promotes gen 1; the second job's base is the same
	// cold start, so it would be superseded: resolve it again for gen 1.
	if code, out, errs := runCLI(t, "promote", "--job-dir", first, "--pi-version", "1"); code != exitOK || !strings.Contains(out, `"gen":1`) {
		t.Fatalf("first promote: %d %s %s", code, out, errs)
	}
	if code, _, errs := runCLI(t, "resolve", "--key", key, "--job-dir", job, "--pi-version", "1"); code != exitOK {
		t.Fatalf("resolve: %s", errs)
	}
	os.WriteFile(filepath.Join(job, "session", "current.jsonl"), []byte(header+header), 0o600)

	meta, err := os.OpenFile(filepath.Join(root, key, "meta.db"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer meta.Close()
	if err := unix.Flock(int(meta.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "promote", "--job-dir", job, "--pi-version", "1", "--log-format", "json")
	cmd.Env = append(os.Environ(), cliChildEnv+"=1")
	var out, errs strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitOpened(t, cmd.Process.Pid, meta.Name())
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()
	ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if !ws.Signaled() || ws.Signal() != syscall.SIGTERM || out.Len() != 0 {
		t.Fatalf("promote sent SIGTERM: %v, stdout %q, stderr %q; want killed by SIGTERM, nothing on stdout", cmd.ProcessState, out.String(), errs.String())
	}
	unix.Flock(int(meta.Fd()), unix.LOCK_UN)
	for i, want := range []string{`"promoted":true,"reason":"promoted","bytes":` + fmt.Sprint(2*len(header)) + `,"gen":2,"run":"unanswered","repeat":false`, `"gen":2,"run":"unanswered","repeat":true`} {
		code, got, errs := runCLI(t, "promote", "--job-dir", job, "--pi-version", "1")
		if code != exitOK || !strings.Contains(got, want) {
			t.Errorf("promote %d after the kill: exit %d, %s %s; want %s", i+1, code, got, errs, want)
		}
	}
}

// waitOpened returns once process pid has path open: a promote that has
// meta.db open is at the key's lock, or about to wait for it. It slept
// 50 ms, in which a -race child on a loaded machine may not have started,
// and the signal then killed a promote that had done nothing, which
// proved nothing about one waiting. Without /proc (not Linux) it still
// sleeps; the deadline only bounds a hang.
func waitOpened(t *testing.T, pid int, path string) {
	t.Helper()
	fds := filepath.Join("/proc", strconv.Itoa(pid), "fd")
	if _, err := os.Stat("/proc/self/fd"); err != nil {
		time.Sleep(50 * time.Millisecond)
		return
	}
	for end := time.Now().Add(20 * time.Second); time.Now().Before(end); time.Sleep(time.Millisecond) {
		ents, _ := os.ReadDir(fds)
		for _, e := range ents {
			if l, err := os.Readlink(filepath.Join(fds, e.Name())); err == nil && l == path {
				return
			}
		}
	}
	t.Fatalf("process %d never opened %s", pid, path)
}

// The fleet's etcd prefix follows the sessions root's rule: white space
// around it is a quoting mistake, and taken as given it is another
// namespace in etcd (every key absent there, promote filling it). It is a
// configuration error naming the variable or flag, exit 2, before any
// connection.
func TestEtcdPrefixWithWhiteSpaceIsAnError(t *testing.T) {
	clearEnv(t)
	t.Setenv("PI_SESSIONS_ETCD_ENDPOINTS", "http://127.0.0.1:1")
	t.Setenv("PI_SESSIONS_TRANSCRIPTS_DIR", t.TempDir())
	t.Setenv("PI_SESSIONS_ETCD_TIMEOUT", "100ms")
	for _, c := range []struct{ env, flag, name string }{
		{env: " /sessdb", name: "PI_SESSIONS_ETCD_PREFIX"},
		{env: "/sessdb ", name: "PI_SESSIONS_ETCD_PREFIX"},
		{flag: "/sessdb\u00a0", name: "--etcd-prefix"},
	} {
		t.Setenv("PI_SESSIONS_ETCD_PREFIX", c.env)
		args := []string{"dump", "--json"}
		if c.flag != "" {
			args = append(args, "--etcd-prefix", c.flag)
		}
		code, out, errs := runCLI(t, args...)
		if code != exitUsage || out != "" || !strings.Contains(errs, c.name) || strings.Count(errs, "\n") != 1 {
			t.Errorf("%s %q: exit %d, stdout %q, stderr %q; want exit 2, one line naming %s", c.name, c.env+c.flag, code, out, errs, c.name)
		}
	}
}

// The fleet's transcripts dir follows the same rule: white space around
// it is a quoting mistake, and taken as given, where such a dir exists
// (' ' made in the worker's working directory, a second dir beside the
// mount), every transcript is absent there and promote fills it. It is a
// configuration error naming the variable or flag, exit 2, before any
// connection, whether or not such a dir exists.
func TestTranscriptsDirWithWhiteSpaceIsAnError(t *testing.T) {
	clearEnv(t)
	cwd := t.TempDir()
	t.Chdir(cwd)
	real := filepath.Join(t.TempDir(), "transcripts")
	for _, d := range []string{real, real + " ", filepath.Join(cwd, " "), filepath.Join(cwd, "\u00a0")} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PI_SESSIONS_ETCD_ENDPOINTS", "http://127.0.0.1:1")
	t.Setenv("PI_SESSIONS_ETCD_TIMEOUT", "100ms")
	for _, c := range []struct{ env, flag, name string }{
		{env: " ", name: "PI_SESSIONS_TRANSCRIPTS_DIR"},
		{env: real + " ", name: "PI_SESSIONS_TRANSCRIPTS_DIR"},
		{env: real + "\n", name: "PI_SESSIONS_TRANSCRIPTS_DIR"},
		{flag: "\u00a0", name: "--transcripts-dir"},
		{flag: " " + real, name: "--transcripts-dir"},
	} {
		t.Setenv("PI_SESSIONS_TRANSCRIPTS_DIR", c.env)
		for _, args := range [][]string{{"dump", "--json"}, {"reap", "--json"}} {
			if c.flag != "" {
				args = append(args, "--transcripts-dir", c.flag)
			}
			code, out, errs := runCLI(t, args...)
			if code != exitUsage || out != "" || !strings.Contains(errs, c.name) || !strings.Contains(errs, "white space") || strings.Count(errs, "\n") != 1 {
				t.Errorf("%s %q, %s: exit %d, stdout %q, stderr %q; want exit 2, one line naming %s and the white space", c.name, c.env+c.flag, args[0], code, out, errs, c.name)
			}
		}
	}
}

// stopOnWrite is a stderr that stops the fleet's etcd member at its first
// write, the walk's progress line after the first entry: the walk has
// begun, and what is left to read fails.
type stopOnWrite struct {
	buf     strings.Builder
	stop    func()
	stopped bool
}

func (s *stopOnWrite) Write(p []byte) (int, error) {
	if !s.stopped {
		s.stopped = true
		s.stop()
	}
	return s.buf.Write(p)
}

// A command that fails prints nothing on stdout (cli.md, json.md): no
// partial stream, no summary. A fleet's dump --history reads each key's
// history from etcd during the walk; etcd lost half-way is a fault (exit
// 1), and what it had printed must not stand as a stream without its
// summary. Each key's pi version is long, so that the first entry fills
// the output's buffer: written on the way, it reached stdout before etcd
// was stopped.
// fleetOfLongKeys is a fleet of n keys (the first a0a0..., then a1a1...)
// whose pi versions are 4000 bytes long, so that a dump entry fills an
// output buffer; its etcd answers within 50ms or not at all.
func fleetOfLongKeys(t *testing.T, n int) *testFleet {
	t.Helper()
	clearEnv(t)
	root := filepath.Join(t.TempDir(), "sessions")
	long := strings.Repeat("v", 4000) // a legacy sidecar holds at most 4096 bytes
	for i := range n {
		// Legacy key dirs, moved into meta.db, then into the fleet.
		dir := filepath.Join(root, strings.Repeat(fmt.Sprintf("%02x", 0xa0+i), 16))
		os.MkdirAll(dir, 0o700)
		os.WriteFile(filepath.Join(dir, "current.jsonl"), []byte(header), 0o600)
		os.WriteFile(filepath.Join(dir, "pi-version"), []byte(long), 0o600)
		// Promoted two days ago (a legacy key's clock is its mtime): its
		// superseded files are past the grace period.
		old := time.Now().Add(-48 * time.Hour)
		os.Chtimes(filepath.Join(dir, "current.jsonl"), old, old)
	}
	if sum := migrateJSON(t, exitOK, "migrate", "--json", root); sum.Migrated != n {
		t.Fatalf("migrate: %+v", sum)
	}
	f := startFleet(t)
	if sum := migrateJSON(t, exitOK, "migrate", "--to", "etcd", "--json", root); sum.Migrated != n {
		t.Fatalf("migrate --to etcd: %+v", sum)
	}
	t.Setenv("PI_SESSIONS_ETCD_TIMEOUT", "50ms")
	return f
}

func TestFleetDumpFaultMidWalkPrintsNothing(t *testing.T) {
	// More keys than one read of records and histories takes
	// (etcdmeta.GetManyMost): the walk reads etcd again after its first
	// report.
	f := fleetOfLongKeys(t, etcdmeta.GetManyMost+8)
	forceProgress = true
	// The first entry spills the held output to a temp file: what it
	// holds is not printed either.
	limit := spoolInMemory
	spoolInMemory = 100
	t.Cleanup(func() { forceProgress, spoolInMemory = false, limit })
	// One walker: the keys after the first batch are read after etcd is
	// gone.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	var out strings.Builder
	errs := &stopOnWrite{stop: func() { f.c.Stop(0) }}
	code := run([]string{"dump", "--json", "--history", "1"}, &out, errs)
	if code != exitFault || out.Len() != 0 {
		t.Errorf("dump with etcd lost half-way: exit %d, %d bytes on stdout (%.120q...), stderr %q; want exit 1 and nothing on stdout", code, out.Len(), out.String(), errs.buf.String())
	}
}

// A path longer than any the system opens (a 100 KB PI_SESSIONS_DIR, a
// runaway --job-dir) is a configuration or usage error naming it, exit 2,
// in one short line: it was a fault (exit 1) whose line quoted the whole
// path, twice, 200 KB of stderr for a worker's log.
func TestHugePathIsOneShortError(t *testing.T) {
	clearEnv(t)
	huge := "/" + strings.Repeat("x", 100_000)
	key := strings.Repeat("d3", 16)
	root := t.TempDir()
	session := filepath.Join(t.TempDir(), "session.jsonl")
	if err := os.WriteFile(session, []byte(`{"type":"session","version":3,"id":"s","timestamp":"t","cwd":"/w"}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		env  string
		args []string
		name string
	}{
		{huge, []string{"resolve", "--key", key, "--job-dir", filepath.Join(t.TempDir(), "job"), "--pi-version", "1"}, "PI_SESSIONS_DIR"},
		{huge, []string{"dump", "--json"}, "PI_SESSIONS_DIR"},
		{"", []string{"dump", "--json", huge}, "the DIR argument"},
		{root, []string{"resolve", "--key", key, "--job-dir", huge, "--pi-version", "1"}, "--job-dir"},
		{root, []string{"promote", "--job-dir", huge, "--pi-version", "1"}, "--job-dir"},
		{root, []string{"promote", "--job-dir", t.TempDir(), "--pi-version", "1", "--models", huge}, "--models"},
		{"", []string{"engage", "replay", huge}, "FILE"},
		{"", []string{"engage", "replay", "--svg", huge, session}, "--svg"},
	} {
		t.Setenv("PI_SESSIONS_DIR", c.env)
		code, out, errs := runCLI(t, c.args...)
		if code != exitUsage || out != "" || !strings.Contains(errs, c.name) || strings.Count(errs, "\n") != 1 || len(errs) > 1000 {
			t.Errorf("%s: exit %d, stdout %q, %d bytes on stderr (%.200q); want exit 2, one short line naming %s", c.args[0], code, out, len(errs), errs, c.name)
		}
	}
}

// failingWriter is a stdout on a full disk.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, syscall.ENOSPC }

// promote's answer that cannot be written (a full disk) exits 1, after the
// promotion: promote run again with the same ticket reads it, a repeat of
// the same generation, nothing written twice.
func TestPromoteAnswerNotWrittenExits1AndTheRetryRepeats(t *testing.T) {
	clearEnv(t)
	t.Setenv("PI_SESSIONS_DIR", filepath.Join(t.TempDir(), "sessions"))
	job := t.TempDir()
	if code, _, errs := runCLI(t, "resolve", "--key", strings.Repeat("d4", 16), "--job-dir", job, "--pi-version", "1"); code != exitOK {
		t.Fatalf("resolve: %s", errs)
	}
	appendAnswered(t, job, "one")
	var errs strings.Builder
	if code := run([]string{"promote", "--job-dir", job, "--pi-version", "1"}, failingWriter{}, &errs); code != exitFault || !strings.Contains(errs.String(), "no space left") {
		t.Fatalf("promote onto a full stdout: exit %d, stderr %q; want exit 1 naming the write's error", code, errs.String())
	}
	code, out, serr := runCLI(t, "promote", "--job-dir", job, "--pi-version", "1")
	if code != exitOK || !strings.Contains(out, `"promoted":true,"reason":"promoted"`) || !strings.Contains(out, `"gen":1,"run":"answered","repeat":true`) {
		t.Errorf("promote again: exit %d, %s %s; want the promotion of gen 1, repeated", code, out, serr)
	}
}

// check on a fleet reads each record's history from etcd during the walk,
// as dump --history does: etcd lost half-way is a fault (exit 1), and the
// findings already written must not stand as a stream without its
// summary. The first key holds 40 orphan generation files, notices enough
// to fill the output's buffer before etcd is stopped.
func TestFleetCheckFaultMidWalkPrintsNothing(t *testing.T) {
	f := fleetOfLongKeys(t, 8)
	kd := filepath.Join(f.dir, strings.Repeat("a0", 16))
	old := time.Now().Add(-48 * time.Hour)
	for g := range 40 {
		p := filepath.Join(kd, fmt.Sprintf("%016x-%016x.jsonl", 0, g))
		os.WriteFile(p, []byte(header), 0o600)
		os.Chtimes(p, old, old)
	}
	forceProgress = true
	// The first findings spill the held report to a temp file: what it
	// holds is not printed either.
	limit := spoolInMemory
	spoolInMemory = 100
	t.Cleanup(func() { forceProgress, spoolInMemory = false, limit })
	// One walker: the keys after the first batch are read after etcd is
	// gone.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	var out strings.Builder
	errs := &stopOnWrite{stop: func() { f.c.Stop(0) }}
	code := run([]string{"check", "--json"}, &out, errs)
	if code != exitFault || out.Len() != 0 {
		t.Errorf("check with etcd lost half-way: exit %d, %d bytes on stdout (%.120q...), stderr %q; want exit 1 and nothing on stdout", code, out.Len(), out.String(), errs.buf.String())
	}
}
