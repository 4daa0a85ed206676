package db

import (
	"errors"
	"fmt"
	"io/fs"
)

// These errors can be returned when opening a DB or running a transaction.
// They are always wrapped with the operation, the path and the cause; test
// for them with errors.Is.
var (
	// ErrDamaged is returned when meta.db cannot be trusted: it is 0 bytes,
	// not a regular file (a link, FIFO or directory), both meta pages are
	// invalid, it is shorter than the high-water mark of the meta page bbolt
	// would use, its freelist or page tree is malformed (a cycle, a page id
	// or offset out of bounds, keys out of order; for a writer, a page in
	// use on the freelist), a record does not decode, a bucket is missing,
	// the file changed under the lock, bbolt panicked or faulted on one of
	// its pages, or a transcript generation would go back.
	ErrDamaged = errors.New("damaged database")

	// ErrNewerSchema is returned when the file's schema version is newer
	// than SchemaVersion. Such a file is never written.
	ErrNewerSchema = errors.New("schema newer than this binary")

	// ErrLockTimeout is returned when the in-process lock or the file lock
	// was not had within the lock timeout, or when meta.db was replaced
	// under the lock twice in a row (the lock then never covered the file
	// the name refers to).
	ErrLockTimeout = errors.New("lock timeout")
)

// These errors can be returned by transactions.
var (
	// ErrReadOnly is returned when a write is attempted on a DB opened with
	// OpenReader or inside View.
	ErrReadOnly = errors.New("read-only")

	// ErrClosed is returned when a DB is used after Close, or a Tx after the
	// function it was passed to has returned.
	ErrClosed = errors.New("closed")
)

// pathErr gives every error the "op path: cause" shape of io/fs.
func pathErr(op, path string, err error) error {
	return &fs.PathError{Op: op, Path: path, Err: err}
}

// damaged wraps a description of the damage with ErrDamaged.
func damaged(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrDamaged, fmt.Sprintf(format, args...))
}

// damagedBy wraps a cause (a decode error, a bbolt error) with ErrDamaged
// without hiding the cause from errors.Is and errors.As.
func damagedBy(what string, cause error) error {
	return fmt.Errorf("%w: %s: %w", ErrDamaged, what, cause)
}

// panicError is what a recovered bbolt panic or memory fault becomes. It is
// damage, and also tells the DB that bbolt's internal locks may be held by
// the frame that panicked.
type panicError struct{ value any }

func (e *panicError) Error() string {
	return fmt.Sprintf("%v: bbolt panicked: %v", ErrDamaged, e.value)
}

func (e *panicError) Is(target error) bool { return target == ErrDamaged }
