package store

import (
	"os"

	"sessdb/internal/durable"
)

// durability is the store's view of the one durability seam, durable.FS:
// promotion's key dir, temp, its fsync, the rename into place and the
// directory fsync, and the renames and removals of reap and check
// --repair (a key dir renamed aside, meta.db moved aside, temps and a
// reaped dir removed, an empty key dir's rmdir), and the unlink of a
// meta.db made for a lock alone (removeLockOnly). bbolt's commits do not pass through here: bbolt
// fsyncs its own file. Production uses diskWrites{}
// (durable.Disk); the power-cut test uses diskWrites{journal}.
type durability interface {
	mkdir(dir *os.File, name string, perm uint32) (bool, error)
	createTemp(dir *os.File, name string) (*os.File, error)
	syncFile(f *os.File) error
	rename(dir *os.File, from, to string) error
	renameNoReplace(dir *os.File, from, to string) error
	remove(dir *os.File, name string) error
	rmdir(dir *os.File, name string) error
	syncDir(dir *os.File) error
	// disk is the seam itself, for what package durable makes through
	// it (durable.MkdirAll).
	disk() durable.FS
}

// diskWrites makes the store's writes through fs; a nil fs is durable.Disk.
type diskWrites struct{ fs durable.FS }

func (d diskWrites) disk() durable.FS {
	if d.fs == nil {
		return durable.Disk{}
	}
	return d.fs
}

func (d diskWrites) mkdir(dir *os.File, name string, perm uint32) (bool, error) {
	return d.disk().Mkdir(dir, name, perm)
}

func (d diskWrites) createTemp(dir *os.File, name string) (*os.File, error) {
	return d.disk().CreateTemp(dir, name)
}

func (d diskWrites) syncFile(f *os.File) error {
	if err := d.disk().SyncFile(f); err != nil {
		return &os.PathError{Op: "fsync", Path: f.Name(), Err: err}
	}
	return nil
}

func (d diskWrites) rename(dir *os.File, from, to string) error {
	return d.disk().Rename(dir, from, to)
}

func (d diskWrites) renameNoReplace(dir *os.File, from, to string) error {
	return d.disk().RenameNoReplace(dir, from, to)
}

func (d diskWrites) remove(dir *os.File, name string) error { return d.disk().Remove(dir, name) }

func (d diskWrites) rmdir(dir *os.File, name string) error { return d.disk().Rmdir(dir, name) }

func (d diskWrites) syncDir(dir *os.File) error { return d.disk().SyncDir(dir) }
