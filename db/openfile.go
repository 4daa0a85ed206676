package db

import (
	"context"
	"errors"
	"io"
	"os"
	"runtime"
	"time"

	"golang.org/x/sys/unix"

	"sessdb/internal/dirflock"
	"sessdb/internal/faults"
	"sessdb/internal/fsat"
)

// openFileLocked opens meta.db relative to dirfd without following a link or
// blocking on a FIFO, refuses anything but a regular file, takes the flock,
// checks that the name still refers to the locked file, and runs the
// pre-check, all before bbolt sees the file. meta is what the meta pages
// say. A file whose pages span at most snapshotLimit bytes is read once, up
// to its high-water mark, and checked in memory; whole is then those bytes.
// A writer's meta.db with more than one name is first given a file of its
// own (ownFile; before is Options.BeforeWrite); *copied is then set to the
// file that was at the name. *stamp is the file's when its pages were
// read: a file written while they were is ErrDamaged (see fileStamp).
func openFileLocked(ctx context.Context, dirfd int, name string, write, gated, history bool, before func() error, deadline time.Time, copied *fileID, stamp *fileStamp) (file *os.File, whole []byte, meta MetaPages, err error) {
	// The name is lstat'ed first, and anything but a regular file refused
	// unopened: the open of a device node runs its driver.
	var lst unix.Stat_t
	if err := unix.Fstatat(dirfd, FileName, &lst, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return nil, nil, meta, pathErr("open", name, err)
	}
	switch lst.Mode & unix.S_IFMT {
	case unix.S_IFREG:
	case unix.S_IFLNK:
		return nil, nil, meta, pathErr("open", name, damaged("a symbolic link"))
	default:
		return nil, nil, meta, pathErr("open", name, damaged("not a regular file (mode %#o)", lst.Mode))
	}
	if testHookLstated != nil {
		testHookLstated()
	}
	// O_NOFOLLOW: a link swapped in since the lstat fails with ELOOP
	// instead of being followed, so no file outside the key dir is read or
	// written through it. O_NONBLOCK: a FIFO swapped in opens at once
	// instead of blocking until some writer appears. O_NOCTTY: a terminal
	// swapped in never becomes the process's controlling one.
	flags := unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_CLOEXEC | unix.O_NOCTTY
	if write {
		flags = unix.O_RDWR | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_CLOEXEC | unix.O_NOCTTY
	}
	fd, err := openat(dirfd, FileName, flags, 0)
	switch err {
	case nil:
	case unix.ELOOP:
		return nil, nil, meta, pathErr("open", name, damaged("a symbolic link"))
	case unix.EISDIR, unix.ENXIO, unix.EOPNOTSUPP: // a directory opened to write; a FIFO with no reader, or a socket (ENXIO on Linux, EOPNOTSUPP on macOS and FreeBSD)
		return nil, nil, meta, pathErr("open", name, damagedBy("not a regular file", err))
	default:
		return nil, nil, meta, pathErr("open", name, err)
	}
	// Judged on the descriptor, not the name: what was opened is what is
	// checked, with no window in which the name could be swapped.
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, nil, meta, pathErr("open", name, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return nil, nil, meta, pathErr("open", name, damaged("not a regular file (mode %#o)", st.Mode))
	}
	// O_NONBLOCK was for the open of a FIFO; a regular file ignores it, but
	// os.NewFile would try to register a non-blocking fd with the poller.
	if err := unix.SetNonblock(fd, false); err != nil {
		unix.Close(fd)
		return nil, nil, meta, pathErr("open", name, err)
	}
	f := os.NewFile(uintptr(fd), name)
	fail := func(err error) (*os.File, []byte, MetaPages, error) {
		fsat.CloseFlocked(f)
		return nil, nil, meta, err
	}
	if err := faults.At(faults.DBOpenBeforeLock); err != nil {
		return fail(pathErr("open", name, err))
	}
	lock := func(fd int, write bool, deadline time.Time) error { return flockUntil(ctx, fd, write, deadline) }
	if gated {
		lock = func(fd int, write bool, deadline time.Time) error { return flockGated(ctx, dirfd, fd, write, deadline) }
	}
	if err := lock(fd, write, deadline); err != nil {
		return fail(pathErr("open", name, err))
	}
	if testHookLocked != nil {
		testHookLocked()
	}
	// The name may no longer refer to the file that is now locked: reap
	// and check --repair unlink meta.db while they hold its lock, and an
	// open that got its descriptor just before gets the flock just after,
	// on a file that no name leads to. Its lock would exclude nobody.
	var now unix.Stat_t
	err = unix.Fstatat(dirfd, FileName, &now, unix.AT_SYMLINK_NOFOLLOW)
	if err != nil || now.Dev != st.Dev || now.Ino != st.Ino {
		return fail(errReplaced)
	}
	// The size read before the lock may be stale: a writer that held the
	// lock may have grown the file.
	if err := unix.Fstat(fd, &st); err != nil {
		return fail(pathErr("open", name, err))
	}
	judge := func() (err error) {
		*stamp = stampOf(&st)
		if testHookReading != nil {
			testHookReading()
		}
		if meta, err = InspectMeta(f, st.Size); err != nil {
			return err
		}
		// bbolt reads nothing past the high-water mark; the file goes on
		// to the size of bbolt's last mapping, a hole that costs as much
		// to read.
		var src io.ReaderAt = f
		whole = nil
		if hw := meta.HighWater(); hw <= snapshotLimit {
			if whole, err = readPrefix(f, hw); err != nil {
				return err
			}
			src = memPages(whole)
		}
		if err := precheckTree(src, meta, write); err != nil {
			return err
		}
		return unchangedSince(f, *stamp)
	}
	if err := judge(); err != nil {
		return fail(pathErr("open", name, err))
	}
	// The key dir is listed only for a file with another name: an open of
	// one with a single name, every promotion's, pays nothing for this.
	if write && st.Nlink > 1 && uint64(st.Nlink) > 1+uint64(tempNamesOf(dirfd, &st)) {
		// A file the open refuses (damage, a newer schema) is refused
		// before the copy, which would put another file at its name and
		// cut it from its other names: a refused open changes nothing. A
		// file too large for a snapshot is read through bbolt, on the
		// copy, after it (openDB).
		if whole != nil {
			if err := verifyWhole(whole, meta, history); err != nil {
				return fail(pathErr("open", name, err))
			}
		}
		own, err := ownFile(dirfd, f, &st, name, before)
		if err != nil {
			return fail(err)
		}
		fsat.CloseFlocked(f) // the old file's lock: its waiters find the name renamed over
		f = own
		*copied = fileID{uint64(st.Dev), uint64(st.Ino)}
		if err := unix.Fstat(int(f.Fd()), &st); err != nil {
			return fail(pathErr("open", name, err))
		}
		// Judged again, as the file bbolt will read: the bytes copied are
		// what was judged above only if no process ignored the lock.
		if err := judge(); err != nil {
			return fail(pathErr("open", name, err))
		}
	}
	return f, whole, meta, nil
}

// verifyWhole reads the pre-checked pages whole as a writer's open reads
// them (openDB), a fault or a panic being damage.
func verifyWhole(whole []byte, meta MetaPages, history bool) error {
	err := guard(func() error {
		snap, err := readSnapshot(whole, meta)
		if err == nil {
			_, err = verifyRecords(snap, history)
		}
		return err
	})
	var pe *panicError
	if errors.As(err, &pe) {
		err = damagedBy("snapshot", err)
	}
	return err
}

// openat is unix.Openat retried on EINTR: an open can be interrupted by a
// signal (the runtime preempts with SIGURG) before it decides anything.
func openat(dirfd int, name string, flags int, mode uint32) (int, error) {
	return fsat.IgnoringEINTR(func() (int, error) { return unix.Openat(dirfd, name, flags, mode) })
}

// fsync is unix.Fsync retried on EINTR, as openat.
func fsync(fd int) error {
	_, err := fsat.IgnoringEINTR(func() (struct{}, error) { return struct{}{}, unix.Fsync(fd) })
	if testHookSynced != nil && err == nil {
		testHookSynced(fd)
	}
	return err
}

// testHookSynced lets a test see which descriptors were made durable: no
// file system a test runs on loses what an fsync skipped.
var testHookSynced func(fd int)

// testHookReading lets a test write meta.db after its stamp is taken and
// before its pages are read, as a process that ignores the lock could.
var testHookReading func()

// testHookLocked lets a test replace meta.db after its lock is had.
var testHookLocked func()

// testHookLstated lets a test swap what is at meta.db's name between the
// lstat that judged it and the open.
var testHookLstated func()

// flockGated takes fd's flock through a turnstile, the key dir's own
// flock (dirfd), held only until fd's is had: a writer holds the
// turnstile exclusively while it waits for the readers inside to leave,
// and a new reader cannot pass it meanwhile. Without it a stream of
// readers in other processes (a resolve is a process of its own), whose
// shared flocks overlap, left no instant free for a writer's poll, and a
// promotion under eight looping resolves of its key was locked out
// (BenchmarkPromoteUnderReaders): flock has no writer preference, which
// the in-process lock gives only to handles of one process. The
// turnstile orders nobody's access, fd's flock does: where the key dir
// cannot be flocked (a filesystem without flock on directories), fd's
// flock is taken without it, as before.
func flockGated(ctx context.Context, dirfd, fd int, write bool, deadline time.Time) error {
	err := flockDir(ctx, dirfd, write, deadline)
	switch {
	case err == nil:
		defer unix.Flock(dirfd, unix.LOCK_UN)
	case errors.Is(err, ErrLockTimeout), ctx.Err() != nil:
		return err
	}
	return flockUntil(ctx, fd, write, deadline)
}

// flockDir takes the flock of a key dir, its turnstile, as flockUntil
// takes any flock. Every take of the turnstile goes through it, so that a
// test can have it go as on a file system that cannot flock a directory
// (internal/dirflock); in production it is flockUntil.
func flockDir(ctx context.Context, dirfd int, write bool, deadline time.Time) error {
	if take, err := dirflock.Flock(); !take {
		return err
	}
	return flockUntil(ctx, dirfd, write, deadline)
}

// holdTurnstile takes the turnstile of the key dir dirfd exclusively for
// an open with Options.HoldTurnstile, on a descriptor of its own that
// shares dirfd's open file description (the caller's dir is only borrowed
// for the open), and returns what lets it go. Where the dir cannot be
// flocked there is no turnstile to hold, as in flockGated. It gives up
// its wait early, with ctx's error, once ctx is done.
func holdTurnstile(ctx context.Context, dirfd int, deadline time.Time) (release func(), err error) {
	// Close-on-exec in the one call: a child forked between a dup and
	// its CloseOnExec would keep the key dir open past its exec.
	fd, err := unix.FcntlInt(uintptr(dirfd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	err = flockDir(ctx, fd, true, deadline)
	switch {
	case err == nil:
		return func() {
			unix.Flock(fd, unix.LOCK_UN) // the description is dir's too
			unix.Close(fd)
		}, nil
	case errors.Is(err, ErrLockTimeout), ctx.Err() != nil:
		unix.Close(fd)
		return nil, err
	}
	unix.Close(fd)
	return func() {}, nil
}

// AwaitTurnstile waits, at most timeout (0 or less means
// DefaultLockTimeout), until no open holds dir's turnstile exclusively,
// and lets it go at once: a look that writes nothing waits there for a
// writer with Options.HoldTurnstile (store's check, at a reap-owned dir
// found with no meta.db, for the reap at work on it) and for any writer
// waiting for meta.db's lock. Where the dir cannot be flocked it returns
// that error at once; where a flock of it is had and locks nothing
// (macOS's NFS client), nil at once: neither waits for a writer.
func AwaitTurnstile(dir *os.File, timeout time.Duration) error {
	fd := int(dir.Fd())
	err := flockDir(context.Background(), fd, false, time.Now().Add(Options{LockTimeout: timeout}.timeout()))
	if err == nil {
		unix.Flock(fd, unix.LOCK_UN)
	}
	runtime.KeepAlive(dir)
	if err != nil {
		return &os.PathError{Op: "flock", Path: dir.Name(), Err: err}
	}
	return nil
}

// LockExclusive takes the exclusive flock of f, dir's meta.db as its
// caller opened it, the way a writer's open takes it: through dir's
// turnstile (see flockGated), waiting at most timeout (0 or less means
// DefaultLockTimeout). It is for a caller that must lock the very file it
// opened, one no open would accept (check --repair moves a damaged meta.db
// aside under its lock). Closing f releases it.
func LockExclusive(dir, f *os.File, timeout time.Duration) error {
	err := flockGated(context.Background(), int(dir.Fd()), int(f.Fd()), true, time.Now().Add(Options{LockTimeout: timeout}.timeout()))
	runtime.KeepAlive(dir)
	runtime.KeepAlive(f)
	if err != nil {
		return &os.PathError{Op: "flock", Path: f.Name(), Err: err}
	}
	return nil
}
