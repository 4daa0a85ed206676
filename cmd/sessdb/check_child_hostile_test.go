package main

import (
	"context"
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

	"sessdb/internal/etcdtest"
	"sessdb/internal/sample"
	"sessdb/store"
)

// hostileChild makes the test's check process misbehave on the key named
// by SESSDB_TEST_CHILD_HOSTILE, the way SESSDB_TEST_CHILD_HOSTILE_MODE
// says: a line for another key, binary garbage, a long line or one without
// end, its stdout closed, stderr flooded, or a grandchild that keeps its pipes
// open (its pid appended to SESSDB_TEST_CHILD_PIDS).
func hostileChild(key string) {
	if key != os.Getenv("SESSDB_TEST_CHILD_HOSTILE") {
		return
	}
	switch os.Getenv("SESSDB_TEST_CHILD_HOSTILE_MODE") {
	case "forge":
		fmt.Fprintf(os.Stdout, `{"key":%q,"problems":null}`+"\n", forgedKey)
	case "garbage":
		os.Stdout.WriteString("\x00\xff\x1b[2Jnot json\n")
	case "long-line":
		os.Stdout.WriteString(strings.Repeat("y", 512<<10) + "\n")
	case "flood":
		chunk := strings.Repeat("x", 1<<20)
		for range floodMiB {
			if _, err := os.Stdout.WriteString(chunk); err != nil {
				os.Exit(9)
			}
		}
		time.Sleep(time.Hour)
	case "close-stdout":
		os.Stdout.Close()
		time.Sleep(time.Hour)
	case "stderr-flood":
		chunk := strings.Repeat("e", 1<<20)
		for range floodMiB {
			os.Stderr.WriteString(chunk)
		}
	case "fork", "fork-setsid":
		sleep := exec.Command("sleep", "15")
		sleep.Stdout, sleep.Stderr = os.Stdout, os.Stderr
		sleep.SysProcAttr = &syscall.SysProcAttr{Setsid: os.Getenv("SESSDB_TEST_CHILD_HOSTILE_MODE") == "fork-setsid"}
		if sleep.Start() != nil {
			os.Exit(8)
		}
		if f, err := os.OpenFile(os.Getenv("SESSDB_TEST_CHILD_PIDS"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600); err == nil {
			fmt.Fprintln(f, sleep.Process.Pid)
			f.Close()
		}
		time.Sleep(time.Hour)
	}
}

// forgedKey is the key a hostile check process answers for instead of
// the one it was asked about.
var forgedKey = store.Key("forged", "answer", "another-key")

// floodMiB is how much a flooding check process writes: far more than an
// answer, which is a key and at most maxDeepProblems short lines.
const floodMiB = 64

// allocated runs f and returns how many bytes the heap allocated meanwhile
// (none of this package's tests runs in parallel).
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// A check process whose output is not its answer to the key asked about
// gives no verdict: an answer for another key (here saying "sound" where
// the key's own check finds damage) is never taken for the key's, garbage
// and a line without end are causes, and a flood, on stdout or stderr,
// costs the parent a bounded amount of memory.
func TestCheckTakesOnlyTheAnswerToTheKeyAsked(t *testing.T) {
	cases := []struct {
		mode, timeout, cause string
		exit                 int
	}{
		{"forge", "1m", `the check process answered "{\"key\":\"` + forgedKey, exitIssues},
		{"garbage", "1m", `the check process answered "\x00\xff\x1b[2Jnot json"`, exitIssues},
		{"long-line", "1m", `the check process answered "` + strings.Repeat("y", 200) + `..."`, exitIssues},
		{"flood", "10s", "the check process answered a line longer than 1 MiB", exitIssues},
		{"close-stdout", "1m", "the check process was killed by signal SIGKILL", exitIssues},
		{"stderr-flood", "1m", "", exitIssues}, // then the key's own answer: damage
	}
	for _, c := range cases {
		t.Run(c.mode, func(t *testing.T) {
			atSampleTime(t)
			root := oneKeyRoot(t)
			t.Setenv("SESSDB_TEST_CHILD_HOSTILE", sample.Resumable)
			t.Setenv("SESSDB_TEST_CHILD_HOSTILE_MODE", c.mode)
			t.Setenv("SESSDB_TEST_CHILD_DAMAGE", sample.Resumable)
			var code int
			var out, errs string
			start := time.Now()
			heap := allocated(func() {
				code, out, errs = runCLI(t, "check", "--deep-check-timeout", c.timeout, root)
			})
			took := time.Since(start)
			want := "problem  " + sample.Resumable + "/meta.db: meta-check-failed: bbolt's consistency check: injected: page 7"
			if c.cause != "" {
				want = "problem  " + sample.Resumable + "/meta.db: meta-check-failed: bbolt's consistency check did not complete: " + c.cause
			}
			if code != c.exit || !strings.Contains(out, want) {
				t.Errorf("exit %d, want %d and the line %q\n%s%s", code, c.exit, want, out, errs)
			}
			if len(out) > 64<<10 {
				t.Errorf("the report is %d bytes: what the check process wrote is not bounded in it", len(out))
			}
			if heap > 24<<20 {
				t.Errorf("check allocated %d MiB while its check processes wrote %d MiB each", heap>>20, floodMiB)
			}
			if c.mode == "flood" && took > 8*time.Second {
				t.Errorf("check took %v: a line past the bound waited out the timeout", took)
			}
			if n := childrenOf(t, os.Getpid()); n != 0 {
				t.Errorf("%d check processes outlived check", n)
			}
		})
	}
}

// A check process that hangs with a grandchild holding its stdout and
// stderr open (in its process group, or in a session of its own) is
// killed at the timeout, and check goes on: the pipes' other end staying
// open must not keep check waiting for their end.
func TestCheckDoesNotWaitForWhatAHungChildLeftHoldingItsPipes(t *testing.T) {
	for _, mode := range []string{"fork", "fork-setsid"} {
		t.Run(mode, func(t *testing.T) {
			atSampleTime(t)
			root := oneKeyRoot(t)
			pids := filepath.Join(t.TempDir(), "pids")
			t.Setenv("SESSDB_TEST_CHILD_HOSTILE", sample.Resumable)
			t.Setenv("SESSDB_TEST_CHILD_HOSTILE_MODE", mode)
			t.Setenv("SESSDB_TEST_CHILD_PIDS", pids)
			t.Cleanup(func() {
				b, _ := os.ReadFile(pids)
				for _, f := range strings.Fields(string(b)) {
					if pid, err := strconv.Atoi(f); err == nil && pid > 1 {
						syscall.Kill(pid, syscall.SIGKILL) // the sleep this test started, by its pid
					}
				}
			})
			start := time.Now()
			code, out, errs := runCLI(t, "check", "--deep-check-timeout", "1s", root)
			took := time.Since(start)
			want := "timed out after 1s (the check process was killed); tried again in a fresh check process: timed out after 1s"
			if code != exitIssues || !strings.Contains(out, want) {
				t.Fatalf("exit %d, want 3 and %q\n%s%s", code, want, out, errs)
			}
			if took > 10*time.Second {
				t.Errorf("check took %v with a 1s timeout: it waited for the grandchild's sleep 15", took)
			}
			if n := childrenOf(t, os.Getpid()); n != 0 {
				t.Errorf("%d check processes outlived check", n)
			}
			// What a check process started in its own process group is
			// killed with it; a process that left the group is out of
			// reach, and only its hold on the pipes is cut.
			b, _ := os.ReadFile(pids)
			started := strings.Fields(string(b))
			if len(started) != 2 {
				t.Fatalf("%d grandchildren started, want 2", len(started))
			}
			// A SIGKILL is sent, not waited for: the kernel ends a killed
			// process some scheduler rounds later (a fresh-clone CI saw
			// one alive as check returned, under the load of every
			// package at once). Killed means dead within seconds.
			alive := func(pid string) bool {
				st, err := os.ReadFile("/proc/" + pid + "/stat")
				return err == nil && !strings.Contains(string(st[strings.LastIndexByte(string(st), ')'):]), ") Z ")
			}
			for _, pid := range started {
				if mode == "fork-setsid" {
					if !alive(pid) {
						t.Errorf("grandchild %s in a session of its own dead after check: not the test's premise", pid)
					}
					continue
				}
				for deadline := time.Now().Add(5 * time.Second); alive(pid) && time.Now().Before(deadline); {
					time.Sleep(10 * time.Millisecond)
				}
				if alive(pid) {
					t.Errorf("grandchild %s in the check process's group alive 5 s after check", pid)
				}
			}
		})
	}
}

// Ctrl-C while a check process is starting (it has not said it is ready)
// ends check at once as an interrupt, exit 130, the process killed: not a
// failure to start found 10 s later.
func TestCheckInterruptedWhileAChildStarts(t *testing.T) {
	atSampleTime(t)
	root := oneKeyRoot(t)
	children := childLog(t)
	t.Setenv("SESSDB_TEST_CHILD_START_HANG", "1")
	interruptOnceAChildStarts(t, children) // it hangs before its ready line
	start := time.Now()
	code, out, errs := runCLI(t, "check", root)
	if code != exitInterrupted || !strings.Contains(out, "(interrupted)") {
		t.Fatalf("exit %d, want 130\n%s%s", code, out, errs)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("check took %v to stop after an interrupt", d)
	}
	if n := childrenOf(t, os.Getpid()); n != 0 {
		t.Errorf("%d check processes outlived check", n)
	}
}

func openFDs(t *testing.T) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(fds)
}

// Replacing check processes costs nothing that lasts: after 10 of them
// died and were replaced, the parent holds the descriptors and goroutines
// it held before, and no process, zombie or not, is left. Each count is
// exact, so a replacement that leaks shows at once: 10 keep what 50 did
// (a kill that does not wait for its child, leaving descriptors and a
// zombie, or whose reader goroutine stays, failed this test at 5 keys in
// 20 runs of 20) at a fifth of the CPU of the race-built processes
// (about 0.15 s each).
func TestReplacedChildrenLeaveNothingBehind(t *testing.T) {
	root := t.TempDir()
	key := store.Key("github", "replaced", "children")
	t.Setenv("SESSDB_TEST_CHILD_EXIT", key)
	// What is counted is what a replacement leaves, not how fast a start
	// is: starved (nice 19 beside busy loops), a race-built child missed
	// the production bound of 10 s to its ready line.
	prev := readyTimeout
	readyTimeout = time.Minute
	defer func() { readyTimeout = prev }()
	d := &deepChecker{root: root, timeout: time.Minute}
	ctx := context.Background()
	// One round first: what the first start sets up for good (exec's
	// lookups, the signal machinery) is not a leak.
	if _, err := d.check(ctx, key); err != nil {
		t.Fatal(err)
	}
	fds, before := openFDs(t), etcdtest.Goroutines()
	const keys = 5
	for range keys { // two processes per key: one, and its retry
		res, err := d.check(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(res.Incomplete, "exited 7") {
			t.Errorf("check = %+v", res)
		}
	}
	d.close()
	if d.deaths != 2*keys+2 {
		t.Errorf("%d check processes died, want %d", d.deaths, 2*keys+2)
	}
	if n := openFDs(t); n != fds {
		t.Errorf("%d descriptors open after %d check processes were replaced, %d before", n, 2*keys, fds)
	}
	// exec's and the reader's goroutines end with their process. Counted
	// are those this test's goroutine started, not the process's: a
	// fresh-clone CI once counted 4 after, 3 before, a goroutine of
	// another source.
	if left := etcdtest.StartedStillRunning(before, 5*time.Second); len(left) != 0 {
		t.Errorf("%d goroutines started by the %d replaced check processes still run:\n%s", len(left), 2*keys, strings.Join(left, "\n\n"))
	}
	if all, zombies := processes(t, os.Getpid()); all != 0 {
		t.Errorf("%d processes left, %d of them zombies", all, zombies)
	}
}

// sessdb check stopped by SIGTERM mid deep check (exit 130), or killed
// outright by SIGKILL, leaves no check process running with the key's
// meta.db mapped: the first kills and reaps it, the kernel kills it after
// the second (its death signal).
func TestCheckStoppedOrKilledLeavesNoCheckProcess(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		t.Run(unix.SignalName(sig), func(t *testing.T) {
			atSampleTime(t)
			root := oneKeyRoot(t)
			log := filepath.Join(t.TempDir(), "children")
			t.Setenv("SESSDB_TEST_CHILD_LOG", log)
			t.Setenv("SESSDB_TEST_CHILD_HANG", sample.Resumable)
			pid := func() int {
				b, _ := os.ReadFile(log)
				n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
				return n
			}
			t.Cleanup(func() {
				if p := pid(); p > 1 {
					syscall.Kill(p, syscall.SIGKILL) // the check process this test started, if it outlived the test
				}
			})
			cmd := exec.Command(os.Args[0], "check", "--deep-check-timeout", "10m", root)
			cmd.Env = append(os.Environ(), cliChildEnv+"=1", "PI_SESSIONS_DIR=")
			var out, errs strings.Builder
			cmd.Stdout, cmd.Stderr = &out, &errs
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(30 * time.Second)
			for pid() == 0 && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			child := pid()
			if child == 0 {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("no check process started\n%s%s", out.String(), errs.String())
			}
			cmd.Process.Signal(sig)
			done := make(chan struct{})
			go func() { cmd.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				cmd.Process.Kill()
				<-done
				t.Fatalf("check still running 20 s after %v", sig)
			}
			if sig == syscall.SIGTERM && cmd.ProcessState.ExitCode() != exitInterrupted {
				t.Errorf("after SIGTERM: %v, want exit 130\n%s%s", cmd.ProcessState, out.String(), errs.String())
			}
			// The kernel delivers the death signal, and the check
			// process is reaped by whoever inherits it, as the parent
			// exits: wait for that, a few seconds at most.
			gone := func() bool {
				st, err := os.ReadFile("/proc/" + strconv.Itoa(child) + "/stat")
				return err != nil || strings.Contains(string(st[strings.LastIndexByte(string(st), ')'):]), ") Z ")
			}
			for end := time.Now().Add(5 * time.Second); !gone() && time.Now().Before(end); {
				time.Sleep(10 * time.Millisecond)
			}
			if !gone() {
				t.Errorf("the check process %d still runs 5 s after check ended by %s", child, unix.SignalName(sig))
			}
		})
	}
}

// fakeChild makes the check processes a shell script: body runs after its
// ready line (or instead of it, when ready is false).
func fakeChild(t *testing.T, ready bool, body string) {
	t.Helper()
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	script := "#!" + sh + "\n"
	if ready {
		script += "echo ready\n"
	}
	p := filepath.Join(t.TempDir(), "child")
	if err := os.WriteFile(p, []byte(script+body+"\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	prev := childExecutable
	childExecutable = func() (string, error) { return p, nil }
	t.Cleanup(func() { childExecutable = prev })
}

// A binary that dies on every key is not retried for ever: check gives up
// when maxChildDeaths processes have died (two per key: the key's and its
// retry's), with an error that says so.
func TestCheckGivesUpOnChildrenThatAlwaysDie(t *testing.T) {
	root := t.TempDir()
	fakeChild(t, true, "read key; exit 9")
	d := &deepChecker{root: root, timeout: time.Minute}
	defer d.close()
	var err error
	keys := 0
	for ; keys < maxChildDeaths; keys++ {
		var res store.DeepResult
		res, err = d.check(context.Background(), store.Key("github", "dies", strconv.Itoa(keys)))
		if err != nil {
			break
		}
		if !strings.Contains(res.Incomplete, "the check process exited 9") {
			t.Fatalf("key %d: %+v", keys, res)
		}
	}
	if keys != maxChildDeaths/2 || err == nil || err.Error() != "deep check: 1000 check processes died; giving up" {
		t.Fatalf("after %d keys: %v; want 500 keys checked, then the error", keys, err)
	}
	if all, _ := processes(t, os.Getpid()); all != 0 {
		t.Errorf("%d processes left", all)
	}

}

// A check process that does not start stops check at its first key, and
// the error says why first: what it did instead of its ready line, then
// the head of its stderr. Only the child that hangs waits out the start's
// bound, shortened to 200 ms; the others are given the default (10 s),
// which only bounds a hang: within 200 ms a starved test binary (nice 19
// beside four busy loops) had not seen a shell exit or say its line, and
// the cause was the timeout's.
func TestCheckSaysWhyAChildDidNotStart(t *testing.T) {
	prev := readyTimeout
	defer func() { readyTimeout = prev }()
	for _, c := range []struct {
		name, script, why string
		ready             time.Duration
	}{
		{"exits", "echo 'flag provided but not defined: -internal-deep-check' >&2; exit 2", "(it exited 2): flag provided but not defined", prev},
		{"says something else", "echo 'usage: sessdb COMMAND'; sleep 60", `(it said "usage: sessdb COMMAND"): nothing on stderr`, prev},
		{"hangs", "exec sleep 60", "(no ready line within 200ms): nothing on stderr", 200 * time.Millisecond},
	} {
		t.Run(c.name, func(t *testing.T) {
			readyTimeout = c.ready
			fakeChild(t, false, c.script)
			d := &deepChecker{root: t.TempDir(), timeout: time.Minute}
			_, err := d.check(context.Background(), store.Key("github", "dies", "at-start"))
			if err == nil || !strings.Contains(err.Error(), "did not start as a check process "+c.why) {
				t.Fatalf("%v; want %q", err, c.why)
			}
			if all, _ := processes(t, os.Getpid()); all != 0 {
				t.Errorf("%d processes left", all)
			}
		})
	}
}
