package etcdtest

import (
	"os/exec"
	"syscall"
)

// setDeathSignal has the kernel kill the member's process when the test
// binary dies without its cleanups (a panic, a timeout's exit, SIGKILL):
// a member left running would keep its ports and data dir.
func setDeathSignal(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
