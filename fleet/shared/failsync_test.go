package shared

import (
	"os"

	"golang.org/x/sys/unix"

	"sessdb/internal/durable"
)

// failingSyncDir is the disk, but for the fsync of a directory fail
// picks, which fails with EIO.
type failingSyncDir struct {
	durable.Disk
	fail func(d *os.File) bool
}

func (f failingSyncDir) SyncDir(d *os.File) error {
	if f.fail(d) {
		return &os.PathError{Op: "fsync", Path: d.Name(), Err: unix.EIO}
	}
	return f.Disk.SyncDir(d)
}
