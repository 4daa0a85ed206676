package main

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// ioctlGetTermios is the ioctl that reads a terminal's settings: it fails
// on anything that is not a terminal.
const ioctlGetTermios = unix.TCGETS

// childProcAttr puts a deep-check child in a process group of its own and
// has the kernel kill it when its parent dies (strictly, when the parent's
// spawning thread does: Go ends a thread only where a goroutine locked to
// it returns without unlocking, and neither sessdb nor what it imports
// does; a test that did would kill children forked on that thread, as
// internal/etcdtest's startChild tells).
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
