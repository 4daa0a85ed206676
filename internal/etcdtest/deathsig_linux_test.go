package etcdtest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// child is a process startChild started.
type child struct {
	cmd  *exec.Cmd
	done chan struct{} // closed once it was waited for
	err  error         // cmd.Wait's, once done
}

// startSleep starts sleep(1) through startChild, as a member's process is
// started, on the calling goroutine.
func startSleep(bin string) (*child, error) {
	c := &child{cmd: exec.Command(bin, "600"), done: make(chan struct{})}
	err := startChild(c.cmd, func(err error) {
		c.err = err
		close(c.done)
	})
	return c, err
}

// sleepBinary is sleep(1), the stand-in for a member's binary: these
// tests are of how a process is started, not of etcd.
func sleepBinary(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("sleep")
	if err != nil {
		t.Skipf("no sleep(1) to stand in for a member: %v", err)
	}
	return bin
}

// endThread starts a goroutine that locks its thread and returns without
// unlocking it, which ends the thread (but the main thread, which Go
// parks for good instead), and waits until the thread is gone: the kernel
// has then sent every death signal it sends for it. As a rule the
// goroutine runs on the caller's thread, which waits for it: Go runs next
// the goroutine just made.
func endThread() error {
	tid := make(chan int)
	go func() {
		runtime.LockOSThread()
		tid <- syscall.Gettid()
	}()
	id := <-tid
	if id == syscall.Getpid() {
		return nil // the main thread: parked, not ended
	}
	task := fmt.Sprintf("/proc/self/task/%d", id)
	for deadline := time.Now().Add(readyTimeout); ; time.Sleep(time.Millisecond) {
		if _, err := os.Stat(task); errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("thread %d still there %v after the goroutine locked to it ended", id, readyTimeout)
		}
	}
}

// stillRunning ends each child with SIGTERM and returns, for each that
// had died before it (of SIGKILL: a death signal), how it ended. A
// SIGKILL sent before the SIGTERM decides the exit status even if the
// child has not died of it yet: the kernel drops later signals.
func stillRunning(cs []*child) []string {
	var dead []string
	for i, c := range cs {
		_ = c.cmd.Process.Signal(syscall.SIGTERM)
		<-c.done
		var ee *exec.ExitError
		if !errors.As(c.err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGTERM {
			dead = append(dead, fmt.Sprintf("child %d of %d (pid %d): %v", i+1, len(cs), c.cmd.Process.Pid, c.err))
		}
	}
	return dead
}

// A member's process outlives the threads other goroutines lock and end
// (runtime.LockOSThread without an unlock), as fleet's tests that hold a
// thread to the file modes do beside tests that start members. Linux
// sends the parent-death signal startChild sets when the thread that
// forked the child ends (go.dev/issue/27505). Each child here is started
// by a goroutine that then ends threads, the one it runs on first; or
// threads are ended from startChild's own goroutine between the child's
// start and its wait (startedHook), where that goroutine would be moved
// off the forking thread if it were not locked to it. Before (the fork
// made on the caller's thread), the children died of SIGKILL: fleet's
// TestDumpOfAKeyReapedUnderItHasNoRecord on etcd 3.4 saw its member
// "exited (signal: killed)" while it started.
func TestAChildOutlivesThreadsOtherGoroutinesEnd(t *testing.T) {
	bin := sleepBinary(t)
	endThreads := func() error {
		for range 4 {
			if err := endThread(); err != nil {
				return err
			}
		}
		return nil
	}
	for _, when := range []string{"after its start", "before its wait"} {
		t.Run(when, func(t *testing.T) {
			var hooked chan error // each hook's, once it ran
			if when == "before its wait" {
				hooked = make(chan error)
				startedHook = func() { hooked <- endThreads() }
				t.Cleanup(func() { startedHook = nil })
			}
			const rounds = 8
			var cs []*child
			t.Cleanup(func() {
				for _, c := range cs {
					_ = c.cmd.Process.Kill()
					<-c.done
				}
			})
			for range rounds {
				type started struct {
					c   *child
					err error
				}
				r := make(chan started)
				go func() {
					c, err := startSleep(bin)
					switch {
					case err != nil:
					case hooked != nil:
						err = <-hooked
					default:
						err = endThreads()
					}
					r <- started{c, err}
				}()
				s := <-r
				if s.c.cmd.Process != nil {
					cs = append(cs, s.c)
				}
				if s.err != nil {
					t.Fatal(s.err)
				}
			}
			if dead := stillRunning(cs); len(dead) > 0 {
				t.Errorf("%d of %d children died when other goroutines ended their threads:\n%s", len(dead), len(cs), strings.Join(dead, "\n"))
			}
		})
	}
}

// startChild ends no thread: a child that another fork with a death
// signal left on the thread startChild's goroutine locked outlives the
// process startChild started there and waited for. The thread is
// unlocked, not ended with the goroutine, once its process was waited
// for.
func TestAChildsEndEndsNoThread(t *testing.T) {
	bin := sleepBinary(t)
	const rounds = 8
	var others []*child
	t.Cleanup(func() {
		for _, c := range others {
			_ = c.cmd.Process.Kill()
			<-c.done
		}
	})
	for range rounds {
		r := make(chan error)
		go func() {
			// Forked on this goroutine's thread, which startChild's
			// goroutine, made and waited for here, locks as a rule.
			o := &child{cmd: exec.Command(bin, "600"), done: make(chan struct{})}
			o.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
			if err := o.cmd.Start(); err != nil {
				r <- err
				return
			}
			others = append(others, o)
			go func() {
				o.err = o.cmd.Wait()
				close(o.done)
			}()
			c, err := startSleep(bin)
			if err != nil {
				r <- err
				return
			}
			_ = c.cmd.Process.Kill()
			<-c.done
			r <- nil
		}()
		if err := <-r; err != nil {
			t.Fatal(err)
		}
	}
	// startChild's goroutines, unlocked or not, are over.
	for deadline := time.Now().Add(readyTimeout); ; time.Sleep(time.Millisecond) {
		if !strings.Contains(string(dump()), "etcdtest.startChild.func1") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("startChild's goroutines still run %v after their processes were waited for", readyTimeout)
		}
	}
	if dead := stillRunning(others); len(dead) > 0 {
		t.Errorf("%d of %d children forked beside startChild's died when its processes ended:\n%s", len(dead), len(others), strings.Join(dead, "\n"))
	}
}

// deathHelperEnv, set, makes TestAChildDiesWithTheTestBinary the test
// binary it kills: it starts a child (sleep, or a member of the etcd
// binary the value names) and prints its pid.
const deathHelperEnv = "ETCDTEST_DEATH_HELPER"

// A member's process dies with the test binary that started it, even
// when the binary dies without its cleanups (SIGKILL here; a panic, a
// timeout's exit): a member left running would keep its ports and data
// dir. The test binary is run again as the helper that starts one, and
// killed.
func TestAChildDiesWithTheTestBinary(t *testing.T) {
	if v := os.Getenv(deathHelperEnv); v != "" {
		deathHelper(t, v)
		return
	}
	for _, kind := range []string{"sleep", "etcd"} {
		t.Run(kind, func(t *testing.T) {
			bin := ""
			if kind == "sleep" {
				bin = "sleep"
				sleepBinary(t)
			} else {
				bin = ExternalBinary(t)
			}
			self, err := os.Executable()
			if err != nil {
				t.Fatal(err)
			}
			helper := exec.Command(self, "-test.run=^TestAChildDiesWithTheTestBinary$", "-test.v")
			helper.Env = append(os.Environ(), deathHelperEnv+"="+bin)
			out, err := helper.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			helper.Stderr = os.Stderr
			if err := helper.Start(); err != nil {
				t.Fatal(err)
			}
			pid := 0
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				if d, ok := strings.CutPrefix(sc.Text(), "temp "); ok && filepath.Dir(d) == filepath.Clean(os.TempDir()) {
					// The helper's temporary dir, which its cleanups,
					// never run, would have removed.
					t.Cleanup(func() { os.RemoveAll(d) })
				}
				if p, ok := strings.CutPrefix(sc.Text(), "child pid "); ok {
					pid, _ = strconv.Atoi(p)
					break
				}
			}
			if pid > 0 {
				// Whatever the verdict, the child goes with this test.
				t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
			}
			_ = helper.Process.Kill()
			_, _ = io.Copy(io.Discard, out)
			werr := helper.Wait()
			if pid <= 0 {
				t.Fatalf("the helper printed no child pid (%v)", werr)
			}
			// The helper was waited for: every thread of it has ended,
			// and the kernel has sent its death signals.
			for deadline := time.Now().Add(readyTimeout); ; time.Sleep(10 * time.Millisecond) {
				state := procState(pid)
				if state == "" || state == "Z" || state == "X" {
					return
				}
				if time.Now().After(deadline) {
					t.Fatalf("the helper's child %d (%s) still runs (state %s) %v after the helper died of SIGKILL", pid, bin, state, readyTimeout)
				}
			}
		})
	}
}

// deathHelper starts a child as Cluster members are started, prints its
// pid and waits to be killed.
func deathHelper(t *testing.T, bin string) {
	pid := 0
	if bin == "sleep" {
		c, err := startSleep(sleepBinary(t))
		if err != nil {
			t.Fatal(err)
		}
		pid = c.cmd.Process.Pid
	} else {
		c := Start(t, Options{Binary: bin})
		pid = c.members[0].proc.cmd.Process.Pid
		fmt.Printf("temp %s\n", filepath.Dir(t.TempDir()))
	}
	// A thread of this process's ended meanwhile takes no child with it.
	for range 4 {
		if err := endThread(); err != nil {
			t.Fatal(err)
		}
	}
	fmt.Printf("child pid %d\n", pid)
	time.Sleep(10 * time.Minute) // killed long before
}

// procState is the state letter /proc gives process pid, or "" if no
// such process is left.
func procState(pid int) string {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return ""
	}
	// "pid (comm) S ...": comm may hold spaces and parentheses.
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2 : i+3]
	}
	return "?"
}
