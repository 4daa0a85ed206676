package db

import (
	"errors"
	"fmt"
	"io/fs"
)

// The errors of an open, of a DB and of its transactions are wrapped with
// the operation and the path, in the "op path: cause" shape of io/fs, and
// the cause after the sentinel (InspectMeta, which knows no path, wraps only
// the cause). Test for the sentinels with errors.Is, never by message.

// These errors can be returned when opening a DB (OpenReader, OpenWriter).
// No lock is held when they are; see OpenWriter for what it may have
// written.
var (
	// ErrLockTimeout is returned when the in-process lock or the file lock
	// was not had within the lock timeout, or when meta.db was replaced
	// under the lock three times in a row (the lock then never covered the
	// file the name refers to).
	ErrLockTimeout = errors.New("lock timeout")

	// ErrNewerSchema is returned when the file's schema version is newer
	// than SchemaVersion. Such a file is never written.
	ErrNewerSchema = errors.New("schema newer than this binary")
)

// This error can be returned by an open, by any read or write in a
// transaction, and by Check: damage can be found at each of them, and a
// file can be cut short under a reader after its open succeeded.
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
)

// These errors can be returned by View, Update, Check and the methods of a
// Tx when the handle is used in a way its contract forbids. They say
// nothing about the file.
var (
	// ErrReadOnly is returned when a write is attempted on a DB opened with
	// OpenReader or inside View.
	ErrReadOnly = errors.New("read-only")

	// ErrClosed is returned when a DB is used after Close, or a Tx after the
	// function it was passed to has returned.
	ErrClosed = errors.New("closed")

	// ErrRecordTooLarge is returned by a Put or AppendHistory whose record,
	// encoded, is larger than MaxRecordBytes: nothing of it is written, and
	// the transaction fails.
	ErrRecordTooLarge = errors.New("record larger than meta.db holds")
)

// MaxRecordBytes bounds one record, encoded: a value of meta.db. It is far
// above the largest a store writes (its job values are 4 KiB at most each;
// through the CLI no sessdb ever took a value over the 128 KiB a command
// line's argument holds), and far below what a sparse file can claim of a
// value, 4 GiB, which a writer's bbolt copies whole when it rewrites the
// value's page: an open refuses a file holding a larger one as damaged.
const MaxRecordBytes = 1 << 20

// These errors never reach a caller on their own: each is either wrapped in
// one of the sentinels above or consumed inside the package.
var (
	// errReplaced is returned, inside ErrLockTimeout, when meta.db was
	// replaced (or removed) between its open and its flock: the lock then
	// covers a file the name no longer refers to, and protects nothing.
	// openLocked tries again, up to openAttempts in all, before it gives
	// up.
	errReplaced = errors.New("meta.db was replaced while it was being locked")

	// errUpToDate is returned by migrate when no step is pending, and rolls
	// back the migration transaction: opening an up-to-date file for
	// writing must not commit (a commit rewrites a meta page and the
	// mtime). initSchema consumes it.
	errUpToDate = errors.New("schema up to date")

	// errNotInt is returned, inside ErrDamaged, when a value that should be
	// a msgpack integer is another type.
	errNotInt = errors.New("msgpack: not an integer")
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

// keyHex is a key as a damage error names it: in hex, whole when short,
// else its first 32 bytes and its length. Only this package writes keys,
// 8 bytes or a name; any other is damage or another binary's, and bbolt
// takes keys of up to 32 KiB: in hex whole, it made each error about the
// file 64 KiB long.
func keyHex(k []byte) string {
	const max = 32
	if len(k) <= max {
		return fmt.Sprintf("%x", k)
	}
	return fmt.Sprintf("%x…(%d bytes)", k[:max], len(k))
}
