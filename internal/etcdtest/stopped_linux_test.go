package etcdtest

import (
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// threadsStopped tells a running process from one SIGSTOP has stopped,
// and sees it running again after SIGCONT: Suspend's wait rests on it.
func TestThreadsStoppedSeesAStopAndAContinue(t *testing.T) {
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Skipf("no sleep(1) to stop: %v", err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	pid := cmd.Process.Pid

	// wait polls until threadsStopped says want, or fails after 10 s.
	wait := func(want bool, after string) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
			got, err := threadsStopped(pid)
			if err != nil {
				t.Fatalf("threadsStopped(%d) after %s: %v", pid, after, err)
			}
			if got == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("threadsStopped(%d) after %s = %v for 10 s, want %v", pid, after, got, want)
			}
		}
	}
	if got, err := threadsStopped(pid); err != nil || got {
		t.Fatalf("threadsStopped of a running process = %v, %v; want false", got, err)
	}
	if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	wait(true, "SIGSTOP")
	if err := cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	wait(false, "SIGCONT")

	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if got, err := threadsStopped(pid); err == nil {
		t.Fatalf("threadsStopped of a process waited for = %v, nil error; want an error", got)
	}
}
