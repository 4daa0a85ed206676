package testfs

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// DescriptorsOf counts the process's descriptors that lead to the file
// dev/ino (their stat through /proc/self/fd); ok is false where there is
// no /proc.
func DescriptorsOf(dev, ino uint64) (n int, ok bool) {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return 0, false
	}
	for _, e := range entries {
		var st unix.Stat_t
		if unix.Stat(filepath.Join("/proc/self/fd", e.Name()), &st) == nil && uint64(st.Dev) == dev && uint64(st.Ino) == ino {
			n++
		}
	}
	return n, true
}

// DupDescriptorOf duplicates a descriptor the process holds of path (found
// through /proc/self/fd; close-on-exec), as a child forked at that moment
// holds a copy until it execs: the copy shares the open file description,
// and with it any flock on it. ok is false where there is no /proc; an
// error where no descriptor of path is open.
func DupDescriptorOf(path string) (fd int, ok bool, err error) {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1, false, nil
	}
	for _, e := range entries {
		n, err := strconv.Atoi(e.Name())
		if target, rerr := os.Readlink(filepath.Join("/proc/self/fd", e.Name())); err != nil || rerr != nil || target != path {
			continue
		}
		fd, err := unix.FcntlInt(uintptr(n), unix.F_DUPFD_CLOEXEC, 0)
		return fd, true, err
	}
	return -1, true, fmt.Errorf("no descriptor of %s is open", path)
}
