package etcdtest

import (
	"os/exec"
	"runtime"
	"syscall"
)

// startChild starts cmd, a member's process, and calls exited with
// cmd.Wait's error once it has ended. The kernel kills the process
// (SIGKILL) when the test binary dies without its cleanups (a panic, a
// timeout's exit, SIGKILL): a member left running would keep its ports
// and data dir.
//
// Linux sends that parent-death signal when the thread that forked the
// child ends, not the process (go.dev/issue/27505), and a Go thread ends
// when a goroutine locked to it (runtime.LockOSThread) returns without
// unlocking it: fleet's tests that hold a thread to the file modes do, as
// Beside tests while other tests start members. Forked on whatever thread
// the caller ran on, a member died with a thread an unrelated goroutine
// later locked and ended (fleet's TestDumpOfAKeyReapedUnderItHasNoRecord
// on etcd 3.4: "exited (signal: killed)" while it started). So the fork
// is made on a thread locked to a goroutine of startChild's own, which no
// other goroutine can run on or end, and which keeps it until the process
// has been waited for; then it unlocks it and the thread goes on: ended,
// it would kill whatever children other forks left on it.
func startChild(cmd *exec.Cmd, exited func(error)) error {
	started := make(chan error)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		if startedHook != nil {
			startedHook()
		}
		exited(cmd.Wait())
	}()
	return <-started
}

// startedHook, set by a test, runs on startChild's goroutine between its
// child's start and the wait for it: where a goroutine not locked to its
// thread may be moved off the thread that forked.
var startedHook func()
