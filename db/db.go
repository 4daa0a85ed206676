package db

import (
	"errors"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
	"golang.org/x/sys/unix"
)

// DefaultLockTimeout is the lock wait used when Options.LockTimeout is 0.
const DefaultLockTimeout = 2 * time.Second

// Options configure OpenReader and OpenWriter. The zero value is ready to
// use.
type Options struct {
	// LockTimeout bounds the whole wait for the in-process lock and the
	// file lock together. 0 or less means DefaultLockTimeout; there is no
	// way to wait forever.
	LockTimeout time.Duration

	// Now is the clock for meta/created. nil means time.Now.
	Now func() time.Time

	// NoTurnstile opens a reader without passing the key dir's turnstile
	// (see flockGated): for a reader that runs while another process holds
	// the key's shared lock on its behalf (check's deep check, in a child
	// of the check that holds it). Queued behind a writer that waits for
	// that very lock, it would wait for itself.
	NoTurnstile bool

	// HoldTurnstile has a writer's open keep the key dir's turnstile,
	// exclusively, once meta.db's lock is had, until Close: for a writer
	// that removes the key dir (a reap). Its last steps, after meta.db is
	// unlinked and before the dir is, leave no meta.db whose lock a look
	// could wait for; a look that finds such a dir with no meta.db waits
	// at its turnstile (AwaitTurnstile) instead, and finds it gone. A
	// reader ignores it. Where the key dir cannot be flocked there is no
	// turnstile to keep: the open goes on without it, and such a look
	// does not wait (docs/platforms.md).
	HoldTurnstile bool

	// BeforeWrite, when set, is called by a writer's open before it
	// writes anything of its own in the key dir: before it makes a
	// missing meta.db's temp and again before the link that puts it at
	// the name; and, under the lock, the first Update of a file of an
	// older schema calls it before it commits the schema migration. An
	// error stops the open (or that Update) there, with nothing of its
	// own written, and is returned as it is. It is for a caller whose
	// key dir may be moved aside while the open waits (a quarantine, a
	// reap, another process's lock held meanwhile): nothing may be made
	// or changed in the dir moved aside. It runs with the key dir's
	// in-process lock held (before a migration's commit, its flock and
	// bbolt's write transaction too): it must not open this key dir's
	// meta.db itself, which would wait for the open that called it until
	// LockTimeout.
	BeforeWrite func() error

	// UndecodableHistory has a writer's open take a file whose history
	// holds entries that do not decode, which it otherwise refuses as a
	// reader would: for check --repair, whose one commit removes them
	// (DropUndecodableHistory) and so leaves a file every reader takes.
	// Anything else a reader would refuse is refused as before. No other
	// writer may set it: its commit would land in a file readers refuse.
	UndecodableHistory bool
}

func (o Options) timeout() time.Duration {
	if o.LockTimeout <= 0 {
		return DefaultLockTimeout
	}
	return o.LockTimeout
}

func (o Options) now() time.Time {
	if o.Now == nil {
		return time.Now()
	}
	return o.Now()
}

// DB is an open meta.db with its locks held. It is safe for concurrent use;
// Close waits for running transactions.
type DB struct {
	name   string
	write  bool
	schema uint64 // the file's schema version at open (a schema 0 file's: migrated by the open)
	// upgraded is set once a write has migrated an older schema (schema
	// is then stale, but every bucket it reads exists since schema 1).
	upgraded    atomic.Bool
	now         time.Time    // a writer's clock for a migration at its first write
	beforeWrite func() error // Options.BeforeWrite, asked before that migration's commit
	bdb         *bolt.DB     // nil for a reader's snapshot
	snap        *snapshot    // a reader's whole file, read under the lock
	file        *os.File     // the locked descriptor (bbolt's, when bbolt has it)
	meta        MetaPages    // the meta pages the open judged the file by
	stamp       fileStamp    // the file's size and time when the open read it; a reader's reads are checked against it
	copied      fileID       // the hard-linked file the open gave a copy of its own; zero: none
	unlock      func()       // the in-process lock

	mu     sync.RWMutex // transactions share it, Close takes it
	closed bool
	// fileClosed: CloseFile closed the file; the DB refuses work, and
	// Close only lets the locks go.
	fileClosed bool

	// poison is the first bbolt panic. From then on bbolt's own mutexes may
	// be held by the frame that panicked, so the handle refuses work and
	// Close does not call into bbolt.
	poison atomic.Pointer[error]
}

// MetaPages returns both meta pages as the open found them under the lock,
// and the one in use. A writer's commits since then are not in it.
func (d *DB) MetaPages() MetaPages { return d.meta }

// CopiedFrom returns the device and inode numbers of the file a writer's
// open found at meta.db's name with more than one name and gave a file of
// its own (a copy renamed over it), and ok false when the open copied
// nothing. The file the DB holds is then another inode than the one at the
// name when the open locked it, with the same bytes: for a caller that
// tells the file it found from one made since by its inode, it is the file
// found.
func (d *DB) CopiedFrom() (dev, ino uint64, ok bool) {
	return d.copied.dev, d.copied.ino, d.copied != fileID{}
}

// FileID returns the device and inode numbers of the file the DB holds
// open and locked: which file it judged, wherever its name leads now.
func (d *DB) FileID() (dev, ino uint64, err error) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	if d.closed || d.fileClosed {
		return 0, 0, pathErr("fstat", d.name, ErrClosed)
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(d.file.Fd()), &st); err != nil {
		return 0, 0, pathErr("fstat", d.name, err)
	}
	return uint64(st.Dev), uint64(st.Ino), nil
}

// Path returns the display name the DB was opened with.
func (d *DB) Path() string { return d.name }

// Close releases the DB and both of its locks. It is idempotent. After a
// panic inside bbolt (see ErrDamaged) it does not call bbolt's Close, whose
// mutexes may still be held by the frame that panicked: it unmaps the file,
// drops the flock and closes the descriptor itself.
func (d *DB) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil
	}
	d.closed = true
	defer d.unlock()
	return d.closeFile()
}

// CloseFile closes meta.db's descriptor, and with it the file's flock, and
// keeps the key's in-process lock and the turnstile a writer's open held
// (Options.HoldTurnstile) until Close; the DB does no more work. A remover
// calls it once it has unlinked meta.db, before its rmdir of the key dir:
// NFS (.nfsNNNN) and libfuse's file systems (.fuse_hiddenNNNN: sshfs,
// s3fs) keep a file unlinked while open under a hidden name until its
// last close, and the dir is not empty until then. Held still, the
// turnstile keeps a look at the dir waiting for the rmdir.
func (d *DB) CloseFile() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil
	}
	return d.closeFile()
}

func (d *DB) closeFile() error {
	if d.fileClosed {
		return nil
	}
	d.fileClosed = true
	if d.poison.Load() != nil || d.bdb == nil {
		if d.bdb != nil {
			unmapPoisoned(d.bdb)
		}
		if err := releaseFile(d.file); err != nil {
			return pathErr("close", d.name, err)
		}
		return nil
	}
	if err := d.call(d.bdb.Close); err != nil {
		releaseFile(d.file)
		return pathErr("close", d.name, err)
	}
	// bbolt closed its descriptor; a reader whose bbolt handle Check made
	// still holds its own, with the lock.
	if err := releaseFile(d.file); err != nil {
		return pathErr("close", d.name, err)
	}
	return nil
}

// releaseFile unlocks and closes a file bbolt may still have mapped. Closing
// alone would not release the flock: the mapping holds a reference to the
// open file description, which is what flock locks. A file already closed
// (by bbolt) is left alone; Control refuses it, so a reused descriptor
// number is never touched.
func releaseFile(f *os.File) error {
	if rc, err := f.SyscallConn(); err == nil {
		rc.Control(func(fd uintptr) { unix.Flock(int(fd), unix.LOCK_UN) })
	}
	if err := f.Close(); err != nil && !errors.Is(err, os.ErrClosed) {
		return err
	}
	return nil
}

// View runs fn in a read-only transaction. fn's error is returned as is;
// damage found by a Tx method is returned even if fn dropped it. fn must not
// start another transaction on d or close it: both would wait for fn.
func (d *DB) View(fn func(*Tx) error) error { return d.run(false, fn) }

// Update runs fn in a read-write transaction and commits it if fn returns
// nil; otherwise nothing fn wrote is kept. On a DB opened with OpenReader
// it returns ErrReadOnly.
func (d *DB) Update(fn func(*Tx) error) error {
	if !d.write {
		return pathErr("update", d.name, ErrReadOnly)
	}
	return d.run(true, fn)
}

func (d *DB) run(write bool, fn func(*Tx) error) error {
	op := "view"
	if write {
		op = "update"
	}
	d.mu.RLock()
	defer d.mu.RUnlock()
	if d.closed || d.fileClosed {
		return pathErr(op, d.name, ErrClosed)
	}
	if p := d.poison.Load(); p != nil {
		return pathErr(op, d.name, *p)
	}
	// A snapshot was read whole and checked at the open, under a lock held
	// until Close: no bbolt transaction, and nothing to roll back.
	if d.snap != nil {
		tx := &Tx{snap: d.snap, db: d}
		defer func() { tx.done = true }()
		err := fn(tx)
		if tx.err != nil {
			return tx.err
		}
		return err
	}
	var btx *bolt.Tx
	if err := d.call(func() (err error) { btx, err = d.bdb.Begin(write); return err }); err != nil {
		return pathErr(op, d.name, err)
	}
	tx := &Tx{tx: btx, db: d}
	upgrade := write && d.schema < SchemaVersion && !d.upgraded.Load()
	if upgrade {
		// The migration an older schema's writer's open left to its first
		// write, in the write's own transaction.
		err := d.call(func() error {
			_, err := migrate(btx, migrations, d.now)
			if err == nil && d.beforeWrite != nil {
				if err := d.beforeWrite(); err != nil {
					return beforeWriteError{err}
				}
			}
			return err
		})
		if errors.Is(err, errUpToDate) {
			err = nil
		}
		if err != nil {
			_ = d.call(btx.Rollback)
			var be beforeWriteError
			if errors.As(err, &be) {
				return be.err
			}
			return pathErr(op, d.name, err)
		}
	}
	returned := false
	defer func() {
		tx.done = true
		if !returned { // fn panicked: end the transaction, let the panic go on
			_ = d.call(btx.Rollback)
		}
	}()
	err := fn(tx)
	returned = true
	tx.done = true
	switch {
	case tx.err != nil:
		_ = d.call(btx.Rollback)
		return tx.err
	case err != nil:
		_ = d.call(btx.Rollback)
		return err
	case !write:
		// bbolt ends a read transaction with Rollback; it undoes nothing,
		// but releases the transaction's hold on the mapping.
		if err := d.call(btx.Rollback); err != nil {
			return pathErr(op, d.name, err)
		}
		// What a reader's fn read through the mapping is the file's only
		// if no process wrote the file under the lock since the open (a
		// writer's own commits move its stamp on).
		if !d.write {
			if err := unchangedSince(d.file, d.stamp); err != nil {
				return pathErr(op, d.name, err)
			}
		}
		return nil
	}
	// Commit returns after bbolt has fsynced the data and then the meta
	// page (NoSync is never set here), which is what Update promises.
	if err := d.call(btx.Commit); err != nil {
		return pathErr("commit", d.name, err)
	}
	if upgrade {
		d.upgraded.Store(true)
	}
	return nil
}

// call runs a call into bbolt under guard and poisons the handle if bbolt
// panicked.
func (d *DB) call(fn func() error) error {
	err := guard(fn)
	var pe *panicError
	if errors.As(err, &pe) {
		d.poison.CompareAndSwap(nil, &err)
	}
	return err
}

// guard runs fn so that damage in the mapped file becomes an error. bbolt
// panics on pages it cannot parse, and a page whose element offsets point
// outside the mapping faults (SIGSEGV, or SIGBUS past the end of the file),
// which kills the process unless the goroutine asked for a panic instead.
// Both were reproduced with bbolt 1.5.0.
func guard(fn func() error) (err error) {
	prev := debug.SetPanicOnFault(true)
	defer func() {
		debug.SetPanicOnFault(prev)
		if r := recover(); r != nil {
			err = &panicError{r}
		}
	}()
	return fn()
}
