package main

import "golang.org/x/sys/unix"

// leaveOwnerBits clears the owner's bits from the process's umask, once,
// at the start of the process: sessdb needs the owner's bits of what it
// makes (its dirs are 0700 and its files 0600). fsat gives them back to
// each creation, which is what a Go worker's store has; a process-wide
// umask that never takes them closes what that leaves open: a process
// killed, or a rival's open, between a mkdir and its chmod, and a Linux
// kernel before 6.6, where a directory its owner may not read cannot be
// chmodded without following a link (no fchmodat2). The umask's say over
// the group's and the others' bits is kept: engage --svg's chart, the one
// file a user names, honours it.
func leaveOwnerBits() {
	old := unix.Umask(0o077) // read by setting: one goroutine so far
	unix.Umask(old &^ 0o700)
}
