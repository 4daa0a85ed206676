package db

import (
	"bufio"
	"fmt"
	"os"

	bolt "go.etcd.io/bbolt"
	"golang.org/x/sys/unix"
)

// unmapPoisoned unmaps the file of a bbolt handle that panicked, whose own
// Close may wait forever on a lock the panicking frame held. Left mapped,
// every damaged read would cost the process a mapping for good, and the
// kernel refuses new ones past vm.max_map_count (65530 by default): a
// long-running process reading a file that another process keeps cutting
// short reaches that within the hour (TestReadersSurviveTruncation meets
// about 80 damaged reads a second). The caller holds the DB's lock, so no
// transaction of this handle reads the mapping any more, and nothing that
// left the package points into it: records are decoded copies.
//
// bbolt keeps the mapping's length to itself, so it is read from
// /proc/self/maps; where that fails, the mapping stays. The system call is
// made directly: the slice unix.Munmap wants is bbolt's, and the entry it
// leaves in x/sys's table of mappings is a few bytes.
func unmapPoisoned(bdb *bolt.DB) {
	var addr uintptr
	if guard(func() error { addr = bdb.Info().Data; return nil }) != nil || addr == 0 {
		return // bbolt had no mapping
	}
	if size, ok := mappingSize(addr); ok {
		unix.Syscall(unix.SYS_MUNMAP, addr, size, 0)
	}
}

// mappingSize returns the length of the mapping that starts at addr.
func mappingSize(addr uintptr) (uintptr, bool) {
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var start, end uintptr
		if _, err := fmt.Sscanf(sc.Text(), "%x-%x", &start, &end); err == nil && start == addr && end > start {
			return end - start, true
		}
	}
	return 0, false
}
