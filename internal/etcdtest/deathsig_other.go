//go:build !linux

package etcdtest

import "os/exec"

// startChild starts cmd, a member's process, and calls exited with
// cmd.Wait's error once it has ended. Where the kernel has no
// parent-death signal a member outlives a test binary that died without
// its cleanups.
func startChild(cmd *exec.Cmd, exited func(error)) error {
	if err := cmd.Start(); err != nil {
		return err
	}
	go func() { exited(cmd.Wait()) }()
	return nil
}
