package migrate

import (
	"os"
	"time"

	"golang.org/x/sys/unix"

	"sessdb/internal/fsat"
)

// durability is the seam for the writes migrate makes itself in a key dir:
// the legacy temps (create, fsync), the renames into place, the removals
// (legacy files after ToDB's commit, meta.db after ToLegacy's writes, and
// the temps of a failed write), the transcript's mtime and its fsync, and
// the directory fsyncs. Production uses diskWrites, which makes exactly
// the calls the writer made before the seam existed. A test swaps in a
// journal (Options.disk) that can drop everything not yet fsynced, as a
// power cut would; a SIGKILL leaves the page cache intact, so only that
// catches a missing fsync.
//
// What does not pass through here is durable by its own protocol: bbolt's
// commits and its creation of meta.db (package db fsyncs the file, links
// it and fsyncs the directory), and the store's roll-forward of a pending
// promotion (package store has its own journal for it).
type durability interface {
	// createTemp creates name in dir afresh for writing (O_CREAT|O_EXCL,
	// O_NOFOLLOW, 0600).
	createTemp(dir *os.File, name string) (*os.File, error)
	// syncFile fsyncs f: its data, and its metadata such as the mtime.
	syncFile(f *os.File) error
	// setMtime sets f's mtime to the nanosecond, atime untouched.
	setMtime(f *os.File, at time.Time) error
	// rename renames from over to inside dir.
	rename(dir *os.File, from, to string) error
	// remove removes name inside dir (see removeAt); ENOENT is no error.
	remove(dir *os.File, name string) error
	// syncDir fsyncs dir, making its creates, renames and removals durable.
	syncDir(dir *os.File) error
}

// diskWrites is the production durability: the system calls themselves.
type diskWrites struct{}

func (diskWrites) createTemp(dir *os.File, name string) (*os.File, error) {
	fd, _, err := openFileAt(dir, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL, 0o600)
	if err != nil {
		return nil, err
	}
	return regularFile(fd, fsat.Join(dir, name))
}

func (diskWrites) syncFile(f *os.File) error               { return f.Sync() }
func (diskWrites) setMtime(f *os.File, at time.Time) error { return futimens(int(f.Fd()), at) }
func (diskWrites) rename(dir *os.File, from, to string) error {
	return fsat.RenameAt(dir, from, to)
}
func (diskWrites) remove(dir *os.File, name string) error { return removeAt(dir, name) }
func (diskWrites) syncDir(dir *os.File) error             { return fsat.SyncDir(dir) }
