//go:build !linux

package etcdtest

import "os/exec"

// setDeathSignal does nothing where the kernel has no parent-death signal:
// a member outlives a test binary that died without its cleanups.
func setDeathSignal(*exec.Cmd) {}
