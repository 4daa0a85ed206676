package db

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime"
	"syscall"
	"time"

	bolt "go.etcd.io/bbolt"
	"golang.org/x/sys/unix"

	"sessdb/internal/callerctx"
	"sessdb/internal/faults"
)

// OpenReader opens dir's meta.db read-only under a shared lock. dir is the
// key directory, opened by the caller with O_RDONLY|O_DIRECTORY|O_NOFOLLOW;
// it is used only during the call. name is the path shown in errors.
//
// OpenReader never creates or writes anything. A missing meta.db is an
// error for which errors.Is(err, fs.ErrNotExist) holds. A file of an older
// schema is read as far as it goes: buckets it predates read as empty.
func OpenReader(dir *os.File, name string, opts Options) (*DB, error) {
	return open(context.Background(), dir, name, opts, false)
}

// OpenReaderContext is OpenReader, its wait for the locks ended early once
// ctx is done: the open then fails with an error that wraps ctx's
// (errors.Is(err, context.Canceled) or context.DeadlineExceeded), not
// ErrLockTimeout, and holds nothing. Options.LockTimeout bounds the wait
// all the same. ctx is consulted only while the open waits for a lock; a
// nil ctx is context.Background(), which never ends. A ctx of the
// caller's own type whose Done is closed while its Err is nil, or whose
// Err or Done panics, ends the wait as context.Canceled.
func OpenReaderContext(ctx context.Context, dir *os.File, name string, opts Options) (*DB, error) {
	return open(ctx, dir, name, opts, false)
}

// OpenWriter opens dir's meta.db read-write under an exclusive lock,
// creating it when absent. A file of an older schema is migrated by the
// first Update, in its transaction, not by the open (a schema 0 file, which
// has no buckets, by the open). See
// OpenReader for dir and name. On error no lock is held, and nothing has
// been written except, possibly, a complete new meta.db that it created.
func OpenWriter(dir *os.File, name string, opts Options) (*DB, error) {
	return open(context.Background(), dir, name, opts, true)
}

// OpenWriterContext is OpenWriter, its wait for the locks ended early once
// ctx is done, as OpenReaderContext's. What it may have made before
// (a complete new meta.db) stays, as on any error of OpenWriter's.
func OpenWriterContext(ctx context.Context, dir *os.File, name string, opts Options) (*DB, error) {
	return open(ctx, dir, name, opts, true)
}

func open(ctx context.Context, dir *os.File, name string, opts Options, write bool) (*DB, error) {
	// A nil ctx is context.Background(), as the store's methods take it;
	// looked at only while the open waits, a nil one would panic there
	// alone, under the lock table's mutex, which every later open in the
	// process then waits for. A ctx of the caller's own type that breaks
	// the contract (a Done closed while Err is nil; a panicking method)
	// is held to it (callerctx): the wait ends with context.Canceled
	// rather than waiting again until LockTimeout.
	ctx = callerctx.Of(ctx)
	if write {
		if err := faults.At(faults.DBOpenWriter); err != nil {
			return nil, pathErr("open", name, err)
		}
	}
	// One deadline for both locks: Options promises that LockTimeout bounds
	// the whole wait, and a caller's own deadline cannot be met otherwise.
	deadline := time.Now().Add(opts.timeout())
	defer runtime.KeepAlive(dir) // dirfd below is only borrowed
	dirfd := int(dir.Fd())
	var st unix.Stat_t
	if err := unix.Fstat(dirfd, &st); err != nil {
		return nil, pathErr("open", name, err)
	}
	// A caller's mistake, not damage: the file under it was never reached.
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return nil, pathErr("open", name, syscall.ENOTDIR)
	}
	unlock, err := lockKey(ctx, keyID{uint64(st.Dev), st.Ino}, write, deadline)
	if err != nil {
		return nil, pathErr("open", name, err)
	}
	if write && opts.HoldTurnstile && !opts.NoTurnstile {
		// Taken here, after the in-process lock and before meta.db's, in
		// the order every open takes them; passing it again below, on the
		// same open file description, would let it go.
		release, err := holdTurnstile(ctx, dirfd, deadline)
		if err != nil {
			unlock()
			return nil, pathErr("open", name, err)
		}
		inProcess := unlock
		unlock = func() { release(); inProcess() }
		opts.NoTurnstile = true
	}
	if err := faults.At(faults.DBOpenBeforeMeta); err != nil {
		unlock()
		return nil, pathErr("open", name, err)
	}
	d, err := openLocked(ctx, dirfd, name, opts, write, deadline)
	if err != nil {
		unlock()
		return nil, err
	}
	d.unlock = unlock
	return d, nil
}

// openAttempts bounds an open's tries at meta.db: each after the first
// follows a file replaced or removed under the open while it waited for
// the lock. One is a reap's or a repair's unlink, a quarantine's or a
// repair's move; one more is a writer in another process giving a
// hard-linked meta.db a file of its own (ownFile), which changes which
// file the name leads to, never what the key holds, and must not cost an
// open that one removal alone would let through. More than that is a
// name that keeps changing: the open gives up instead of looping.
const openAttempts = 3

func openLocked(ctx context.Context, dirfd int, name string, opts Options, write bool, deadline time.Time) (*DB, error) {
	var d *DB
	for attempt := 1; ; attempt++ {
		var err error
		if write {
			if err = ensureExists(dirfd, name, opts.now(), opts.BeforeWrite, deadline); err != nil {
				return nil, err
			}
		}
		d, err = openDB(ctx, dirfd, name, write, !opts.NoTurnstile, !opts.UndecodableHistory, opts.BeforeWrite, deadline, opts.timeout())
		if err == nil {
			break
		}
		// Replaced, or removed between the creation and the open (a writer
		// creates it again): again, up to openAttempts in all, then give
		// up.
		retry := errors.Is(err, errReplaced) || write && errors.Is(err, fs.ErrNotExist)
		if !retry || attempt == openAttempts {
			if errors.Is(err, errReplaced) {
				err = pathErr("open", name, fmt.Errorf("%w: %w %d times", ErrLockTimeout, errReplaced, openAttempts))
			}
			return nil, err
		}
	}
	// open installs the real unlock once this returns. Until then a Close
	// on an error path must not release the in-process lock, which open
	// still holds and releases itself.
	d.unlock = func() {}
	if err := d.initSchema(opts.now(), opts.BeforeWrite); err != nil {
		d.Close()
		var be beforeWriteError
		if errors.As(err, &be) {
			return nil, be.err
		}
		return nil, pathErr("open", name, err)
	}
	return d, nil
}

// initSchema reads the schema version, refusing a newer one before anything
// is written, and for a writer of a schema 0 file runs the pending
// migrations, once before (Options.BeforeWrite) lets it commit them; an
// older schema's are run by the first write (DB.run).
func (d *DB) initSchema(now time.Time, before func() error) error {
	var m Meta
	var err error
	if d.write {
		d.now, d.beforeWrite = now, before
		err = d.call(func() error {
			return d.bdb.Update(func(tx *bolt.Tx) (err error) {
				if m, err = readMeta(boltRoot{tx}, SchemaVersion); err == nil && m.Schema > 0 {
					// An older schema is upgraded by the first write (run),
					// not by the open: a writer that only holds the lock (a
					// sweep of temps, a migration that finds nothing to do)
					// must leave the file readable to the sessdb that wrote
					// it, which refuses a newer schema. A schema 0 file has
					// no buckets for a write to use: it is made current here.
					if err = checkBuckets(boltRoot{tx}, m.Schema); err == nil {
						err = errUpToDate
					}
					return err
				}
				if m, err = migrate(tx, migrations, now); err != nil || before == nil {
					return err
				}
				// Under the lock, before the commit: the key dir may have
				// been moved aside while this open waited for it.
				if err := before(); err != nil {
					return beforeWriteError{err}
				}
				return nil
			})
		})
		if errors.Is(err, errUpToDate) {
			err = nil
		}
	} else {
		// A reader never migrates (OpenReader writes nothing): it reads an
		// older schema as it is, and refuses a newer one before it reads a
		// record whose meaning it cannot know.
		err = d.viewRoot(func(root rootView) (err error) {
			if m, err = readMeta(root, SchemaVersion); err != nil {
				return err
			}
			return checkBuckets(root, m.Schema)
		})
	}
	d.schema = m.Schema
	return err
}

// viewRoot runs fn on the root of the file: the snapshot's, or a bbolt
// read transaction's under the guard, since every step of fn reads the
// mapping (issue 15: a reader's own schema check, run outside the guard,
// died of SIGBUS when another process cut the file short).
func (d *DB) viewRoot(fn func(rootView) error) error {
	if d.snap != nil {
		return fn(d.snap)
	}
	err := d.call(func() error {
		return d.bdb.View(func(tx *bolt.Tx) error { return fn(boltRoot{tx}) })
	})
	if err == nil && !d.write {
		err = unchangedSince(d.file, d.stamp)
	}
	return err
}

// openDB opens meta.db with openFileLocked, so that the file is opened
// without following links and checked under its lock before anything reads
// it, and then hands it to bbolt, or for a reader of a small file reads it
// into a snapshot (see snapshot.go).
//
// A writer first reads the whole file as a reader would read it (verify):
// a small file from its snapshot, a large one through bbolt. Writers go
// through bbolt, which checks less than the snapshot decoder (key order,
// for one), and issue 15 found promotions acknowledged into files that
// every reader then refused.
func openDB(ctx context.Context, dirfd int, name string, write, gated, history bool, before func() error, deadline time.Time, timeout time.Duration) (*DB, error) {
	var copied fileID
	var stamp fileStamp
	file, whole, meta, err := openFileLocked(ctx, dirfd, name, write, gated, history, before, deadline, &copied, &stamp)
	if err != nil {
		return nil, err
	}
	if whole != nil && !(write && testSkipWalk) {
		var snap *snapshot
		err := guard(func() (err error) {
			if snap, err = readSnapshot(whole, meta); err == nil && write {
				_, err = verifyRecords(snap, history)
			}
			return err
		})
		if err != nil {
			releaseFile(file)
			var pe *panicError
			if errors.As(err, &pe) {
				err = damagedBy("snapshot", err)
			}
			return nil, pathErr("open", name, err)
		}
		if !write {
			return &DB{name: name, snap: snap, file: file, meta: meta, unlock: func() {}}, nil
		}
	}
	if testHookPrechecked != nil {
		testHookPrechecked()
	}
	bopts := &bolt.Options{
		ReadOnly: !write,
		// bbolt's own flock runs on the descriptor already locked and
		// succeeds at once; its timeout is only a backstop.
		Timeout: timeout,
		// Statistics cost a mutex at every read transaction's start and end,
		// and nothing here reads them.
		NoStatistics: true,
		// bbolt would open the path itself, following a link; it gets the
		// descriptor that was opened without following one, checked and
		// locked above.
		OpenFile: func(string, int, os.FileMode) (*os.File, error) { return file, nil },
	}
	var bdb *bolt.DB
	err = guard(func() (err error) {
		bdb, err = bolt.Open(name, 0o600, bopts)
		return err
	})
	if err != nil {
		releaseFile(file) // bbolt closed it already unless it panicked
		var errno syscall.Errno
		var pe *panicError
		switch {
		case errors.As(err, &pe):
		case changedSince(dirfd, meta):
			// Cut short or replaced after the pre-check, under the lock:
			// bbolt's complaint (an I/O error, for a file cut to 0 bytes
			// that a read-only bbolt tries to initialise) is about damage.
			err = damagedBy("file changed under the lock", err)
		case errors.As(err, &errno):
			// I/O trouble, not the file's content.
		default:
			err = damagedBy("bbolt", err)
		}
		return nil, pathErr("open", name, err)
	}
	d := &DB{name: name, write: write, bdb: bdb, file: file, meta: meta, stamp: stamp, copied: copied, unlock: func() {}}
	err = d.call(func() error {
		return bdb.View(func(tx *bolt.Tx) error {
			// bbolt read the meta page itself: it must be the one the
			// pre-check judged the file by, or the file changed since.
			p := meta.Pages[meta.Active]
			if uint64(tx.ID()) != p.Txid || tx.Size() != meta.HighWater() {
				return damaged("file changed under the lock: bbolt reads txid %d of %d bytes, the pre-check passed txid %d of %d",
					tx.ID(), tx.Size(), p.Txid, meta.HighWater())
			}
			// A file too large for a snapshot was not verified above: its
			// writer reads every record here, through bbolt, guarded.
			if write && whole == nil {
				_, err := verifyRecords(boltRoot{tx}, history)
				return err
			}
			return nil
		})
	})
	if err != nil {
		d.Close()
		return nil, pathErr("open", name, err)
	}
	return d, nil
}

// testHookPrechecked lets a test change meta.db after its pre-check and
// before bbolt reads it, as a process that ignores the lock could.
var testHookPrechecked func()

// changedSince reports whether meta.db is no longer the file of the size
// the pre-check inspected.
func changedSince(dirfd int, meta MetaPages) bool {
	var st unix.Stat_t
	err := unix.Fstatat(dirfd, FileName, &st, unix.AT_SYMLINK_NOFOLLOW)
	return err != nil || st.Size != meta.Size
}
