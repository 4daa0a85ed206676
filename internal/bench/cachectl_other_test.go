//go:build !linux

package bench

import (
	"errors"
	"fmt"
	"runtime"

	"golang.org/x/sys/unix"
)

// errNoCacheControl says this system has neither posix_fadvise's
// POSIX_FADV_DONTNEED (macOS) nor a page-cache residency count the cold
// benchmarks could rely on: they are skipped here, never run warm under a
// cold name.
var errNoCacheControl = fmt.Errorf("page-cache control on %s: %w", runtime.GOOS, errors.ErrUnsupported)

// DropCache evicts the page-cache pages of the files under roots on Linux
// only; here it returns an error that unwraps to errors.ErrUnsupported.
func DropCache(roots ...string) (files int, err error) { return 0, errNoCacheControl }

// SyncFS writes back every dirty page: sync(2) here, for all filesystems
// (there is no syncfs), which is all DropCache would need.
func SyncFS(path string) error {
	unix.Sync()
	return nil
}

// Resident counts page-cache pages on Linux only; here it returns an error
// that unwraps to errors.ErrUnsupported.
func Resident(path string) (resident, pages int, err error) { return 0, 0, errNoCacheControl }

// SetTopDir marks a directory for ext4's Orlov allocator on Linux only;
// here it does nothing and reports false.
func SetTopDir(dir string) bool { return false }
