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
// spawning thread does: Go keeps its threads for the life of the process).
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
