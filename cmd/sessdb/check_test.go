package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"sessdb/db"
	"sessdb/internal/faults"
	"sessdb/internal/quietexit"
	"sessdb/internal/sample"
	"sessdb/store"
)

// TestMain turns the re-executed test binary into a deep-check child and
// nothing else: with the child marker set it runs the check command's
// child side and exits, so a child never runs tests, and so never starts
// children of its own. It comes before cliChildEnv's sessdb, which a check
// process of a test's sessdb child inherits. SESSDB_TEST_CHILD_LOG names a
// file each child appends its pid to, so a test counts the children
// started.
func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		if p := os.Getenv("SESSDB_TEST_CHILD_LOG"); p != "" {
			f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
			if err == nil {
				fmt.Fprintln(f, os.Getpid())
				f.Close()
			}
		}
		if os.Getenv("SESSDB_TEST_CHILD_START_HANG") != "" {
			time.Sleep(time.Hour) // before its ready line: the parent kills it
		}
		childTestHook = testChildHook
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	if os.Getenv(cliChildEnv) == "1" {
		if s := os.Getenv(chartSignalEnv); s != "" {
			chartTempHook = signalSelf(s)
		}
		if s := os.Getenv(cliSignalAtEnv); s != "" {
			point, sig, _ := strings.Cut(s, "=")
			faults.Set(func(p faults.Point) error {
				if p == faults.Point(point) {
					signalSelf(sig)()
				}
				return nil
			})
		}
		forceProgress = os.Getenv(cliProgressEnv) == "1"
		if s := os.Getenv(cliClockEnv); s != "" {
			at, err := time.Parse(time.RFC3339Nano, s)
			if err != nil {
				fmt.Fprintf(os.Stderr, "%s: %v\n", cliClockEnv, err)
				os.Exit(2)
			}
			clock = func() time.Time { return at }
		}
		leaveOwnerBits() // as main does
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	// The tests read plain error lines: --log-format auto is console here,
	// whatever stderr is; the tests of the JSON form ask for it.
	logAuto = func(io.Writer) string { return "console" }
	if os.Getenv(promoteChildEnv) != "" {
		os.Exit(runPromoteChild())
	}
	quietexit.Children()    // every child, and every check's deep-check process, exits without the race detector's second
	quietexit.Exit(m.Run()) // and a passing run ends without the race detector's second of its own
}

// TestMain has the children this package's tests start, and the
// processes those start in turn, exit without the race detector's sleep:
// GORACE in the tests' environment, which they inherit, sets
// atexit_sleep_ms (internal/quietexit).
func TestChildrenInheritNoExitSleep(t *testing.T) {
	if !strings.Contains(" "+os.Getenv("GORACE"), " atexit_sleep_ms=") {
		t.Fatalf("GORACE=%q: the children of a race build sleep 1 s as they exit", os.Getenv("GORACE"))
	}
}

// testChildHook makes the child fail on a chosen key, each way a real one
// can: die of a real SIGBUS (a read past the end of a truncated mapping,
// what a damaged meta.db does to bbolt) on SESSDB_TEST_CHILD_BUS, hang on
// SESSDB_TEST_CHILD_HANG, stop itself with SIGSTOP on _STOP, die of
// SIGKILL on _KILL, exit 7 on _EXIT; on _DAMAGE it completes and reports
// a problem, as a check that found damage does. With SESSDB_TEST_CHILD_ONCE
// naming a file, only the first child to get there fails (it creates the
// file), so a retry succeeds.
func testChildHook(key string) []string {
	if key == "" {
		return nil
	}
	hostileChild(key)
	if key == os.Getenv("SESSDB_TEST_CHILD_DAMAGE") {
		return []string{"injected: page 7 is neither reachable nor free"}
	}
	if once := os.Getenv("SESSDB_TEST_CHILD_ONCE"); once != "" {
		f, err := os.OpenFile(once, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return nil // a child failed here before: this one checks
		}
		f.Close()
	}
	switch key {
	case os.Getenv("SESSDB_TEST_CHILD_BUS"):
		f, err := os.CreateTemp("", "sessdb-bus-")
		if err != nil {
			panic(err)
		}
		os.Remove(f.Name())
		f.Truncate(4096)
		m, err := syscall.Mmap(int(f.Fd()), 0, 4096, syscall.PROT_READ, syscall.MAP_SHARED)
		if err != nil {
			panic(err)
		}
		f.Truncate(0)
		sink = m[100] // SIGBUS: "unexpected fault address", a fatal error no recover catches
	case os.Getenv("SESSDB_TEST_CHILD_HANG"):
		time.Sleep(time.Hour) // the parent kills it long before
	case os.Getenv("SESSDB_TEST_CHILD_STOP"):
		syscall.Kill(os.Getpid(), syscall.SIGSTOP)
		time.Sleep(time.Hour)
	case os.Getenv("SESSDB_TEST_CHILD_KILL"):
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		time.Sleep(time.Hour)
	case os.Getenv("SESSDB_TEST_CHILD_EXIT"):
		os.Exit(7)
	}
	return nil
}

var sink byte

// copySample copies the shipped sample into a temp dir with every mtime
// set to what internal/sample's builder (Build, in its build_test.go) sets
// on the legacy key, so that ages and verdicts do not depend on when the
// repository was checked out.
func copySample(t testing.TB) string {
	t.Helper()
	src := filepath.Join("..", "..", "testdata", "sessions")
	dst := filepath.Join(t.TempDir(), "sessions")
	mtime := sample.Time.Add(-6 * time.Hour)
	var dirs []string
	err := filepath.Walk(src, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		to := filepath.Join(dst, rel)
		if fi.IsDir() {
			dirs = append(dirs, to)
			return os.MkdirAll(to, 0o700)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if err := os.WriteFile(to, b, 0o600); err != nil {
			return err
		}
		return os.Chtimes(to, mtime, mtime)
	})
	if err != nil {
		t.Fatal(err)
	}
	for i := len(dirs) - 1; i >= 0; i-- {
		os.Chtimes(dirs[i], mtime, mtime)
	}
	return dst
}

// atSampleTime runs the CLI an hour after the sample's clock.
func atSampleTime(t *testing.T) {
	clearEnv(t)
	prev := clock
	clock = func() time.Time { return sample.Time.Add(time.Hour) }
	t.Cleanup(func() { clock = prev })
}

// childrenOf counts the live processes whose parent is pid.
func childrenOf(t *testing.T, pid int) int {
	t.Helper()
	all, zombies := processes(t, pid)
	return all - zombies
}

// processes counts the processes whose parent is pid, zombies included,
// and those of them that are zombies.
func processes(t *testing.T, pid int) (all, zombies int) {
	t.Helper()
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so split after ')'.
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		if len(f) > 1 && f[1] == strconv.Itoa(pid) {
			all++
			if f[0] == "Z" {
				zombies++
			}
		}
	}
	return all, zombies
}

// A check child that dies of SIGBUS or hangs is a finding about that key,
// not the end of sessdb; the other keys are still checked, and no child
// outlives the command.
func TestCheckSurvivesADyingChild(t *testing.T) {
	atSampleTime(t)
	root := copySample(t)
	t.Setenv("SESSDB_TEST_CHILD_BUS", sample.Resumable)
	t.Setenv("SESSDB_TEST_CHILD_HANG", sample.LongChain)
	start := time.Now()
	code, out, errs := runCLI(t, "check", "--deep-check-timeout", "2s", root)
	if code != exitIssues {
		t.Fatalf("exit %d, want 3\n%s\n%s", code, out, errs)
	}
	for key, want := range map[string]string{
		sample.Resumable: "the check process exited 2: unexpected fault address",
		sample.LongChain: "timed out after 2s (the check process was killed)",
	} {
		line := "problem  " + key + "/meta.db: meta-check-failed: bbolt's consistency check did not complete: " + want
		if !strings.Contains(out, line) {
			t.Errorf("no line %q in\n%s", line, out)
		}
	}
	if !strings.Contains(out, "[signal SIGBUS: bus error") {
		t.Errorf("the child's crash report is not quoted:\n%s", out)
	}
	if strings.Contains(out, sample.Expired+"/meta.db") {
		t.Errorf("a healthy key got a finding after a child died:\n%s", out)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("check took %v", d)
	}
	if n := childrenOf(t, os.Getpid()); n != 0 {
		t.Errorf("%d child processes outlived check", n)
	}
}

// A process that carries the child marker never starts a child: a
// re-executed binary cannot recurse, whatever it was asked to do.
func TestCheckNeverSpawnsFromAChild(t *testing.T) {
	atSampleTime(t)
	root := copySample(t)
	t.Setenv(childEnv, "1")
	code, out, errs := runCLI(t, "check", root)
	if code != exitFault || !strings.Contains(errs, "refusing to start a check process from a check process (SESSDB_DEEP_CHECK_CHILD is set in the environment; unset it)") || out != "" {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, out, errs)
	}
	if n := childrenOf(t, os.Getpid()); n != 0 {
		t.Fatalf("%d children started", n)
	}
}

func TestCheckExitStatuses(t *testing.T) {
	atSampleTime(t)
	root := copySample(t)
	if code, out, errs := runCLI(t, "check", root); code != exitOK {
		t.Fatalf("the sample: exit %d\n%s%s", code, out, errs)
	}
	os.Truncate(filepath.Join(root, sample.Expired, "meta.db"), 0)
	if code, _, _ := runCLI(t, "check", root); code != exitIssues {
		t.Fatalf("a damaged root: exit %d, want 3", code)
	}
	code, out, _ := runCLI(t, "check", "--repair", root)
	if code != exitOK || !strings.Contains(out, "repair: moved meta.db aside to meta.db.damaged-") {
		t.Fatalf("--repair: exit %d\n%s", code, out)
	}
	if code, _, _ := runCLI(t, "check", "--bogus", root); code != exitUsage {
		t.Fatalf("a bad flag: exit %d", code)
	}
	if code, _, errs := runCLI(t, "check", filepath.Join(root, "nosuch")); code != exitFault || errs == "" {
		t.Fatalf("a missing root: exit %d", code)
	}
	// -h prints the help on stdout (issue 12: it went to stderr).
	code, help, errs := runCLI(t, "check", "-h")
	if code != exitOK || errs != "" || !strings.Contains(help, "example:") || !strings.Contains(help, "130  interrupted") {
		t.Fatalf("-h: exit %d\n%s%s", code, help, errs)
	}
	if !strings.Contains(help, "--repair") || strings.Contains(help, childArg) {
		t.Fatalf("-h shows the wrong flags:\n%s", help)
	}

	prev := interruptContext
	interruptContext = cancelledContext
	defer func() { interruptContext = prev }()
	code, out, errs = runCLI(t, "check", "--json", root)
	var last summaryLine[checkSummary]
	lines := strings.Split(strings.TrimSpace(out), "\n")
	json.Unmarshal([]byte(lines[len(lines)-1]), &last)
	if code != exitInterrupted || !last.Summary.Interrupted || !strings.Contains(errs, "interrupted after 0 entries") {
		t.Fatalf("interrupted: exit %d, %s, %s", code, out, errs)
	}
}

// Each damage case of the issue, made in a copy of the sample, shows up
// through the CLI with a clear line and exit status 3.
func TestCheckDamageCasesThroughTheCLI(t *testing.T) {
	cases := []struct {
		name, line string
		damage     func(root string)
	}{
		{"truncated meta.db", sample.Resumable + "/meta.db: meta-damaged: open " + sample.Resumable + "/meta.db: damaged database: file is 4096 bytes, below the high-water mark", func(root string) {
			os.Truncate(filepath.Join(root, sample.Resumable, "meta.db"), 4096)
		}},
		{"zero-length meta.db", sample.Resumable + "/meta.db: meta-damaged: open " + sample.Resumable + "/meta.db: damaged database: file is 0 bytes", func(root string) {
			os.Truncate(filepath.Join(root, sample.Resumable, "meta.db"), 0)
		}},
		{"random bytes", sample.Resumable + "/meta.db: meta-damaged: open " + sample.Resumable + "/meta.db: damaged database: no valid meta page", func(root string) {
			b := make([]byte, 32<<10)
			for i := range b {
				b[i] = byte(i*131 + 7)
			}
			os.WriteFile(filepath.Join(root, sample.Resumable, "meta.db"), b, 0o600)
		}},
		{"newest meta page zeroed", sample.Resumable + "/meta.db: meta-page-invalid: meta page 0 is invalid", func(root string) {
			f, _ := os.OpenFile(filepath.Join(root, sample.Resumable, "meta.db"), os.O_RDWR, 0)
			defer f.Close()
			fi, _ := f.Stat()
			if m, err := db.InspectMeta(f, fi.Size()); err != nil || m.Active != 0 {
				t.Fatalf("the sample's newer meta page is not page 0: %+v, %v", m, err)
			}
			f.WriteAt(make([]byte, db.PageSize), 0)
		}},
		{"transcript edited out of band", sample.Resumable + "/current.jsonl: transcript-mismatch: CRC32C", func(root string) {
			p := filepath.Join(root, sample.Resumable, "current.jsonl")
			b, _ := os.ReadFile(p)
			os.WriteFile(p, []byte(strings.Replace(string(b), "feedback 2", "feedback 3", 1)), 0o600)
		}},
		{"pending promotion", sample.Resumable + "/meta.db: pending-promotion: gen 3 committed but not renamed into place", func(root string) {
			pendingPromotion(t, root, sample.Resumable)
		}},
		{"stray temp file", sample.Resumable + "/.current.jsonl.tmp-0000000000000001: stray-temp: a promotion temp no record names, 2h old", func(root string) {
			p := filepath.Join(root, sample.Resumable, ".current.jsonl.tmp-0000000000000001")
			os.WriteFile(p, []byte("x"), 0o600)
			then := sample.Time.Add(-time.Hour)
			os.Chtimes(p, then, then)
		}},
		{"symlinked key dir", sample.Resumable + ": link: a symbolic link to", func(root string) {
			moved := filepath.Join(filepath.Dir(root), "moved")
			os.Rename(filepath.Join(root, sample.Resumable), moved)
			os.Symlink(moved, filepath.Join(root, sample.Resumable))
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			atSampleTime(t)
			root := copySample(t)
			c.damage(root)
			code, out, errs := runCLI(t, "check", root)
			if code != exitIssues || !strings.Contains(out, "problem  "+c.line) {
				t.Fatalf("exit %d, want 3 and a line\n  problem  %s...\ngot:\n%s%s", code, c.line, out, errs)
			}
		})
	}
}

// pendingPromotion leaves key with a promotion that committed but was
// never renamed into place, as a crash between the two does.
func pendingPromotion(t *testing.T, root, key string) {
	t.Helper()
	now := func() time.Time { return sample.Time.Add(time.Minute) }
	crash := func(p faults.Point) error {
		if p == faults.PromoteAfterCommit {
			return syscall.EIO
		}
		return nil
	}
	faults.Set(crash)
	defer faults.Set(nil)
	s, err := store.New(root, store.Options{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	job := store.Job{PiVersion: "0.58.3", Venue: "local"}
	jobDir := t.TempDir()
	sess, err := s.Resolve(key, job, jobDir)
	if err != nil || !sess.Resume {
		t.Fatalf("resolve: %+v, %v", sess, err)
	}
	p := filepath.Join(jobDir, store.StagedDirName, store.TranscriptName)
	b, _ := os.ReadFile(p)
	os.WriteFile(p, append(b, "{\"type\":\"message\",\"id\":\"abc\"}\n"...), 0o600)
	if _, err := s.Promote(sess, store.PromoteRequest{PiVersion: "0.58.3"}); err == nil {
		t.Fatal("the promotion did not stop at the commit")
	}
}
