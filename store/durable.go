package store

import (
	"os"

	"golang.org/x/sys/unix"

	"sessdb/internal/fsat"
)

// durability is the seam for the writes the store makes itself: the
// promotion temp, its fsync, the rename into place and the directory fsync.
// Production uses diskWrites. A test swaps in a journal that can drop
// everything not yet fsynced, as a power cut would; a SIGKILL leaves the
// page cache intact, so only that catches a missing fsync. bbolt's commits
// do not pass through here: bbolt fsyncs its own file.
type durability interface {
	createTemp(dir *os.File, name string) (*os.File, error)
	syncFile(f *os.File) error
	rename(dir *os.File, from, to string) error
	syncDir(dir *os.File) error
}

type diskWrites struct{}

func (diskWrites) createTemp(dir *os.File, name string) (*os.File, error) {
	return fsat.OpenAt(dir, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL, 0o600)
}

func (diskWrites) syncFile(f *os.File) error {
	if err := f.Sync(); err != nil {
		return &os.PathError{Op: "fsync", Path: f.Name(), Err: err}
	}
	return nil
}

func (diskWrites) rename(dir *os.File, from, to string) error { return fsat.RenameAt(dir, from, to) }
func (diskWrites) syncDir(dir *os.File) error                 { return fsat.SyncDir(dir) }
