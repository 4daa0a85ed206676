package fsat

import (
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// setMtime is FreeBSD's futimens system call, which x/sys/unix does not
// wrap.
func setMtime(_ *os.File, _ string, f *os.File, ts *[2]unix.Timespec) error {
	_, _, e := unix.Syscall(unix.SYS_FUTIMENS, f.Fd(), uintptr(unsafe.Pointer(ts)), 0)
	if e != 0 {
		return e
	}
	return nil
}

// utimeOmit leaves the access time as it is.
const utimeOmit = unix.UTIME_OMIT

// touch is futimens(fd, NULL).
func touch(f *os.File) error {
	_, _, e := unix.Syscall(unix.SYS_FUTIMENS, f.Fd(), 0, 0)
	if e != 0 {
		return e
	}
	return nil
}
