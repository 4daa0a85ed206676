// Package dirflock is the test seam of a file system that cannot flock a
// directory: package db takes a key dir's own flock, its turnstile (see
// db.AwaitTurnstile), as Flock says, and goes on without it where it
// fails, as it does where flock(2) fails on a directory; package store
// takes a job's staged dir's flock (ErrJobDirBusy) the same way.
//
// Every file system the tests run on flocks a directory; some that sessdb
// may run on do not. FreeBSD's NFSv4 client refuses a lock of anything
// but a regular file (EINVAL), its smbfs a lock of a directory
// (EOPNOTSUPP); an NFSv3 mount with no lock manager refuses every lock
// (ENOLCK, meta.db's too). macOS's NFS client takes no lock of a
// directory and says it did (flock returns 0). A test calls Refuse with
// one of those errors, or Ignore, to run db's and store's code as it runs
// there.
//
// Production never calls either: Flock says to take the flock. It is a
// package variable, as internal/faults' hook is, because the flock is
// db's and the tests that need it are store's too: no option of a public
// API carries it, and an internal package is no one's API.
package dirflock

import (
	"errors"
	"sync/atomic"

	"sessdb/internal/faults"
)

// instead is what a key dir's flock does instead of flock(2): fail with
// err, or, with err nil, succeed and lock nothing.
type instead struct{ err error }

var set atomic.Pointer[instead]

// Flock says how a key dir's flock is taken: by flock(2) (take true), as
// in production; or not at all, failing with err (Refuse), or had at once
// with nothing locked (Ignore: err nil).
func Flock() (take bool, err error) {
	if i := set.Load(); i != nil {
		return false, i.err
	}
	return true, nil
}

// Refuse makes every key dir's flock fail with err (a syscall.Errno, as
// flock(2) fails) until the returned restore is called.
func Refuse(err error) (restore func()) {
	if err == nil {
		panic(errors.New("dirflock.Refuse(nil): a refusal is an error; Ignore takes nothing"))
	}
	return use(&instead{err})
}

// Ignore makes every key dir's flock succeed at once and lock nothing, as
// macOS's NFS client does, until the returned restore is called.
func Ignore() (restore func()) { return use(&instead{}) }

// use sets i. For tests only: nothing else may call Refuse or Ignore. It
// panics while a test runs beside others (faults.Beside): the seam is
// process-wide, and would take their flocks away too.
func use(i *instead) (restore func()) {
	if faults.Besides() {
		panic("dirflock set while tests run beside each other: every test's key dirs would lose their flock; a test that sets it must not be parallel")
	}
	prev := set.Swap(i)
	return func() { set.Store(prev) }
}
