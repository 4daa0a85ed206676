//go:build darwin || freebsd

package main

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// ioctlGetTermios is the ioctl that reads a terminal's settings: it fails
// on anything that is not a terminal.
const ioctlGetTermios = unix.TIOCGETA

// childProcAttr puts a deep-check child in a process group of its own.
// Caveat: macOS and FreeBSD have no parent-death signal in SysProcAttr, so
// a child whose parent was killed outright ends when it reads the end of
// its stdin, after the key it is checking; a deep check hung on that key
// is not ended by anyone.
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
