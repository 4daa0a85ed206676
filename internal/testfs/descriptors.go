package testfs

import (
	"os"
	"path/filepath"

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
