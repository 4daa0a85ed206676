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

// createAfter is the disk, but for CreateTemp, which first runs before
// with the name it is to create.
type createAfter struct {
	durable.Disk
	before func(dir *os.File, name string)
}

func (c createAfter) CreateTemp(dir *os.File, name string) (*os.File, error) {
	c.before(dir, name)
	return c.Disk.CreateTemp(dir, name)
}

// failingSyncFile is the disk, but for the fsync of a file, which fails
// with EIO: an NFS client reports a write the server refused there.
type failingSyncFile struct{ durable.Disk }

func (failingSyncFile) SyncFile(f *os.File) error {
	return &os.PathError{Op: "fsync", Path: f.Name(), Err: unix.EIO}
}

// listing is the disk, but for the listings of directories
// (sharedfs.Lister), which list makes: a test stands in there for another
// host removing a key dir, or a listing failing.
type listing struct {
	durable.Disk
	list func(d *os.File) ([]string, error)
}

func (l listing) ReadDirNames(d *os.File) ([]string, error) { return l.list(d) }
