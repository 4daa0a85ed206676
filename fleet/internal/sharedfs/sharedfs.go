// Package sharedfs is the durability seam of a fleet's own writes: every
// mkdir, create, fsync, rename, link and removal that package fleet/shared
// makes in the transcripts dir, and that package fleet's migrations make
// in a sessions root, goes through FS. Every listing of the transcripts
// dir and of its key dirs (fleet/shared's and fleet's: claim, check,
// reap) goes through ReadDirNames, which a test's FS can see by being a
// Lister.
//
// Production never sets it: FS is durable.Disk, the system calls
// themselves. A test of fleet or fleet/shared sets a power-cut journal
// (package durable/powercut) with Use, to take back what a power cut
// would. It is a package variable, as internal/faults' hook is, because
// the writes are fleet/shared's and the test is fleet's: no option of a
// public API carries it (a fault hook in a public API is what issue 14
// forbids), and an internal package is no one's API.
package sharedfs

import (
	"os"
	"sync"

	"sessdb/internal/durable"
	"sessdb/internal/faults"
	"sessdb/internal/fsat"
)

var (
	mu sync.RWMutex
	fs durable.FS = durable.Disk{}
)

// FS is the FS the fleet's writes go through: durable.Disk unless a test
// set another.
func FS() durable.FS {
	mu.RLock()
	defer mu.RUnlock()
	return fs
}

// Use makes the fleet's writes go through with until the returned
// restore is called. For tests only: nothing else may call it. It panics
// while a test runs beside others (faults.Beside): the seam is
// process-wide, and would take in their writes too.
func Use(with durable.FS) (restore func()) {
	if faults.Besides() {
		panic("sharedfs.Use while tests run beside each other: every test's writes would go through it; a test that sets it must not be parallel")
	}
	mu.Lock()
	defer mu.Unlock()
	prev := fs
	fs = with
	return func() {
		mu.Lock()
		defer mu.Unlock()
		fs = prev
	}
}

// Lister is an FS that lists directories too: set with Use, its
// ReadDirNames makes every listing ReadDirNames makes (a test counts
// them, or fails one).
type Lister interface {
	ReadDirNames(dir *os.File) ([]string, error)
}

// ReadDirNames lists dir, the transcripts dir or a key's directory in it,
// as fsat.ReadDirNames does, or through FS where that is a Lister.
func ReadDirNames(dir *os.File) ([]string, error) {
	if l, ok := FS().(Lister); ok {
		return l.ReadDirNames(dir)
	}
	return fsat.ReadDirNames(dir)
}
