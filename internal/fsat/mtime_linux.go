package fsat

import (
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// setMtime is futimens(3) as glibc makes it, utimensat(fd, NULL, ts, 0):
// x/sys/unix has no futimens, and its Futimes keeps only microseconds.
func setMtime(_ *os.File, _ string, f *os.File, ts *[2]unix.Timespec) error {
	_, _, e := unix.Syscall6(unix.SYS_UTIMENSAT, f.Fd(), 0, uintptr(unsafe.Pointer(ts)), 0, 0, 0)
	if e != 0 {
		return e
	}
	return nil
}

// utimeOmit leaves the access time as it is.
const utimeOmit = unix.UTIME_OMIT

// touch is utimensat(fd, NULL, NULL, 0), futimens(fd, NULL) as glibc makes it.
func touch(f *os.File) error {
	_, _, e := unix.Syscall6(unix.SYS_UTIMENSAT, f.Fd(), 0, 0, 0, 0, 0)
	if e != 0 {
		return e
	}
	return nil
}
