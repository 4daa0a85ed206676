//go:build !linux

package testfs

import (
	"os"

	"golang.org/x/sys/unix"
)

// WatchedNullDevice needs inotify; elsewhere it is an error, and callers
// skip.
func WatchedNullDevice(path string) (opens func() int, stop func(), err error) {
	return nil, nil, &os.PathError{Op: "watch opens", Path: path, Err: unix.ENOTSUP}
}
