// Package dbseam lets the module's power-cut tests see the writes package
// db makes in a key dir outside bbolt: the creation of meta.db (its temp,
// the link to meta.db, the temp's unlink, their fsyncs) and the copy that
// gives a hard-linked meta.db a file of its own (the copy, its fsync, the
// rename over meta.db, the directory fsync).
//
// In production nothing is armed, and db makes those system calls itself,
// paying one atomic load per creation or copy (never on an open of an
// existing meta.db with one name). A test arms an FS with Set, the
// power-cut journal of package durable/powercut, and db then makes them
// through it, so that a cut can take back what a missing fsync would
// lose. The package is internal: a program that uses sessdb cannot arm it.
// The armed FS is process-wide; tests that arm one run one at a time.
package dbseam

import (
	"os"
	"sync/atomic"

	"sessdb/internal/durable"
)

// FS is the durability seam as db writes through it: durable.FS, and what
// it must be told of the files db makes itself.
type FS interface {
	durable.FS
	// Made books f, made at name in dir by db itself (locked before it had
	// a name, which CreateTemp cannot do), as CreateTemp's create: the
	// name is durable once dir is synced. owed says that its data is
	// durable only once SyncFile is called on it (a copy's); otherwise
	// what writes it makes it durable itself (bbolt, whose init and
	// commits fdatasync the file).
	Made(dir *os.File, name string, f *os.File, owed bool) error
	// Handed says that f's data is bbolt's from here on: each commit
	// fdatasyncs the file, so nothing written to it is owed any more.
	Handed(f *os.File)
}

var armed atomic.Pointer[FS]

// Armed is the armed FS, nil when none is (production).
func Armed() FS {
	if p := armed.Load(); p != nil {
		return *p
	}
	return nil
}

// Set arms fs, or disarms when fs is nil. A test that arms one disarms it
// when it is done (t.Cleanup), so the next test starts disarmed.
func Set(fs FS) {
	if fs == nil {
		armed.Store(nil)
		return
	}
	armed.Store(&fs)
}
