// Package durable is the seam for the writes a crash-safe protocol makes
// itself in a directory: make a directory, create a temp file, fsync it,
// set a file's mtime or mode, rename or link into place, remove, fsync
// the directory. A mkdir, a rename, a link, a create or a removal is
// durable only once its directory is synced, and a file's data, mtime and
// mode only once the file is (a directory's mode once it is synced); a
// protocol that skips one of those steps survives a SIGKILL (the page
// cache stays) but not a power cut.
//
// The store's promotion (the key dir it makes included), its reap and
// check --repair (its mode repairs included), migrate's writers, and a
// fleet's writes in its transcripts dir (package fleet/shared, through
// fleet/internal/sharedfs) and in a sessions root (fleet's migrations)
// make these calls through an FS.
// Production passes Disk, the system calls themselves; tests pass the
// journal of package durable/powercut, which can take back everything a
// power cut would, and so fails a protocol with a missing fsync. bbolt's
// commits, durable by bbolt's own fdatasync, do not pass through here;
// package db's directory writes and fsyncs around them (meta.db's
// creation, a hard-linked meta.db's copy) do only in a test that arms
// package durable/dbseam.
package durable

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"

	"sessdb/internal/fsat"
)

// FS makes the durable writes of a protocol. Every name is a single
// component inside dir, never resolved through a link. Implementations
// are safe for concurrent use.
type FS interface {
	// Mkdir makes the directory name inside dir (mode perm) and reports
	// whether it made it: an entry already at the name is no error, and
	// its kind is for the caller's open to judge. The new name, and
	// everything made inside it, is durable only once dir is synced.
	Mkdir(dir *os.File, name string, perm uint32) (bool, error)
	// CreateTemp creates name in dir afresh for writing (O_CREAT|O_EXCL,
	// O_NOFOLLOW, mode 0600). Nothing of it is durable yet.
	CreateTemp(dir *os.File, name string) (*os.File, error)
	// SyncFile fsyncs f: its data, and its metadata such as the mtime.
	SyncFile(f *os.File) error
	// Chmod sets the mode of what f is open on (f may be O_PATH: see
	// fsat.Chmod). The mode is durable only once that inode is fsynced
	// (SyncFile of a descriptor that can be; a directory's SyncDir).
	Chmod(f *os.File, mode uint32) error
	// SetMtime sets the mtime of f, open at name in dir, to the
	// nanosecond, the atime untouched (see fsat.SetMtime).
	SetMtime(dir *os.File, name string, f *os.File, at time.Time) error
	// Rename renames from over to inside dir.
	Rename(dir *os.File, from, to string) error
	// RenameNoReplace renames from to to inside dir, never over an
	// existing to: that fails with an error that unwraps to EEXIST (see
	// fsat.RenameNoReplace).
	RenameNoReplace(dir *os.File, from, to string) error
	// RenameNoReplaceAtomic is RenameNoReplace without its fallback (see
	// fsat.RenameNoReplaceAtomic): where the file system or the system
	// has no atomic no-replace rename it fails with the system's errno
	// and changes nothing, for the caller to fall back on Link and Unlink
	// as it sees fit.
	RenameNoReplaceAtomic(dir *os.File, from, to string) error
	// Link makes to a second name of from inside dir; an existing to
	// fails with an error that unwraps to EEXIST (link(2) never
	// replaces). The new name is durable once dir is synced.
	Link(dir *os.File, from, to string) error
	// Remove removes name inside dir, the link itself if it is one, or an
	// empty directory; nothing there is no error (see fsat.Remove).
	Remove(dir *os.File, name string) error
	// Unlink removes name inside dir, the link itself if it is one; unlike
	// Remove, nothing there (ENOENT) and a directory are errors (see
	// fsat.UnlinkAt).
	Unlink(dir *os.File, name string) error
	// Rmdir removes the empty directory name inside dir; one that holds
	// something fails with ENOTEMPTY (or EEXIST), nothing there with
	// ENOENT (see fsat.RmdirAt).
	Rmdir(dir *os.File, name string) error
	// SyncDir fsyncs dir, making its creates, renames and removals
	// durable.
	SyncDir(dir *os.File) error
}

// Disk is the production FS: each method is the one system call (through
// package fsat). The zero value is ready to use.
type Disk struct{}

// Mkdir implements FS.
func (Disk) Mkdir(dir *os.File, name string, perm uint32) (bool, error) {
	return fsat.MkdirNew(dir, name, perm)
}

// CreateTemp implements FS.
func (Disk) CreateTemp(dir *os.File, name string) (*os.File, error) {
	return fsat.OpenAt(dir, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL, 0o600)
}

// SyncFile implements FS; the error is (*os.File).Sync's.
func (Disk) SyncFile(f *os.File) error { return f.Sync() }

// Chmod implements FS.
func (Disk) Chmod(f *os.File, mode uint32) error { return fsat.Chmod(f, mode) }

// SetMtime implements FS.
func (Disk) SetMtime(dir *os.File, name string, f *os.File, at time.Time) error {
	return fsat.SetMtime(dir, name, f, at)
}

// Rename implements FS.
func (Disk) Rename(dir *os.File, from, to string) error { return fsat.RenameAt(dir, from, to) }

// RenameNoReplace implements FS.
func (Disk) RenameNoReplace(dir *os.File, from, to string) error {
	return fsat.RenameNoReplace(dir, from, to)
}

// RenameNoReplaceAtomic implements FS.
func (Disk) RenameNoReplaceAtomic(dir *os.File, from, to string) error {
	return fsat.RenameNoReplaceAtomic(dir, from, to)
}

// Link implements FS.
func (Disk) Link(dir *os.File, from, to string) error {
	if err := unix.Linkat(int(dir.Fd()), from, int(dir.Fd()), to, 0); err != nil {
		return &os.LinkError{Op: "link", Old: fsat.Join(dir, from), New: fsat.Join(dir, to), Err: err}
	}
	return nil
}

// Remove implements FS.
func (Disk) Remove(dir *os.File, name string) error { return fsat.Remove(dir, name) }

// Unlink implements FS.
func (Disk) Unlink(dir *os.File, name string) error { return fsat.UnlinkAt(dir, name) }

// Rmdir implements FS.
func (Disk) Rmdir(dir *os.File, name string) error { return fsat.RmdirAt(dir, name) }

// SyncDir implements FS.
func (Disk) SyncDir(dir *os.File) error { return fsat.SyncDir(dir) }

// SyncParent fsyncs through disk the directory that holds path's name. A
// parent this user may pass through but not list (a home dir of mode
// 0711) cannot be opened to fsync, and is not one it or a rival of its
// own made the path in: the name is its owner's to make durable.
func SyncParent(disk FS, path string) error {
	pd, err := fsat.OpenDir(filepath.Dir(filepath.Clean(path)))
	if errors.Is(err, fs.ErrPermission) {
		return nil
	}
	if err != nil {
		return err
	}
	defer pd.Close()
	return disk.SyncDir(pd)
}

// MkdirAll is os.MkdirAll (0700, links followed: the operator names the
// path) through disk, with each directory it makes made durable by an
// fsync of its parent before anything is made inside it: a sessions root
// a first promotion or a migration made would otherwise vanish in a
// power cut, with everything acknowledged in it. made is whether this
// call made path itself: one found there, or made by another process
// while this one looked, is not (promote says so only of a root it made).
func MkdirAll(disk FS, path string) (made bool, err error) {
	path = filepath.Clean(path)
	switch st, err := os.Stat(path); {
	case err == nil && st.IsDir():
		return false, nil
	case err == nil:
		return false, &os.PathError{Op: "mkdir", Path: path, Err: unix.ENOTDIR}
	case !errors.Is(err, fs.ErrNotExist):
		return false, err
	}
	parent := filepath.Dir(path)
	if parent != path {
		if _, err := MkdirAll(disk, parent); err != nil {
			return false, err
		}
		// A parent found there may be a rival's, made just now and its
		// name not yet durable: what is made in it would vanish with it.
		// (One made here was synced already; the second fsync is paid
		// only when a root is made.)
		if err := SyncParent(disk, parent); err != nil {
			return false, err
		}
	}
	pd, err := fsat.OpenDir(parent)
	if err != nil {
		return false, err
	}
	defer pd.Close()
	// Not made here means another process made it just now, and may not
	// have fsynced its parent yet: the fsync is this caller's to make.
	made, err = disk.Mkdir(pd, filepath.Base(path), 0o700)
	if err != nil {
		return false, err
	}
	return made, disk.SyncDir(pd)
}
