package db

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"time"

	bolt "go.etcd.io/bbolt"
	"golang.org/x/sys/unix"

	"sessdb/internal/faults"
	"sessdb/internal/fsat"
)

// ensureExists creates meta.db if the name is free. Anything already under
// the name, a link or a 0-byte file included, is left for the open to judge:
// it is never replaced. deadline is the open's: the creation waits for
// nothing past it (createThenLockBy).
func ensureExists(dirfd int, name string, now time.Time, before func() error, deadline time.Time) error {
	var st unix.Stat_t
	err := unix.Fstatat(dirfd, FileName, &st, unix.AT_SYMLINK_NOFOLLOW)
	if err == nil {
		return nil
	}
	if err != unix.ENOENT {
		return pathErr("open", name, err)
	}
	// Once before the temp is made, so that a dir moved aside is not
	// touched at all, and again before the link (create).
	if before != nil {
		if err := before(); err != nil {
			return err
		}
	}
	if err := create(dirfd, name, now, before, deadline); err != nil {
		var be beforeWriteError
		if errors.As(err, &be) {
			return be.err
		}
		return pathErr("create", name, err)
	}
	return nil
}

// create builds a complete schema file under a temporary name and links it
// to meta.db: a reader either finds no file or a whole one, and link, unlike
// rename, fails instead of replacing a meta.db another writer put there
// meanwhile.
func create(dirfd int, name string, now time.Time, before func() error, deadline time.Time) (err error) {
	// A random name: two processes can create at once (the in-process
	// lock orders only one process's opens, and no flock exists yet), and
	// createLocked makes a collision, or a file or link planted at the
	// name, fail the create instead of being written through.
	//
	// The temp's flock, held from before its name exists (createLocked)
	// until its name is gone (the link and the unlink, or the unlink of a
	// failure's garbage), tells a check or a repair looking at it that
	// this creation is in flight, not debris. bbolt's own flock is taken on
	// a duplicate of fd, the same open file, so it is had at once, and
	// bbolt, whose Close lets go of it, is closed only once the name is
	// gone.
	w, err := writesIn(dirfd, name)
	if err != nil {
		return err
	}
	defer w.close()
	tmp, fd, err := newTemp(dirfd, deadline)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), tmp)
	var bdb *bolt.DB
	unlinked := false
	defer func() {
		if !unlinked {
			unix.Unlinkat(dirfd, tmp, 0) // garbage after a failure; the error already says why
		}
		if bdb != nil {
			guard(bdb.Close)
		}
		f.Close()
	}()
	// Its data is bbolt's to make durable: bbolt's init and its commit
	// fdatasync the file.
	if err := w.made(tmp, f, false); err != nil {
		return err
	}
	if testHookCreateStep != nil {
		testHookCreateStep("created")
	}
	if bdb, err = initFile(f, tmp, now); err != nil {
		return err
	}
	if testHookCreateStep != nil {
		testHookCreateStep("initialised")
	}
	// The pages reach the disk before the name does: after a crash meta.db
	// is whole or absent, never a name for pages that were not written.
	if err := w.syncFile(f); err != nil {
		return fmt.Errorf("sync %s: %w", tmp, err)
	}
	if testHookBeforeLink != nil {
		testHookBeforeLink()
	}
	if err := faults.At(faults.DBCreateBeforeLink); err != nil {
		return err
	}
	// Checked as late as can be: the caller's key dir may have been moved
	// aside while this open waited for a lock (a quarantine's, on the
	// meta.db it made for its lock and unlinked again), and the link would
	// put a meta.db in the dir moved aside.
	if before != nil {
		if err := before(); err != nil {
			return beforeWriteError{err}
		}
	}
	lerr := w.link(tmp, FileName)
	exists := errors.Is(lerr, unix.EEXIST)
	if lerr != nil && !exists {
		return fmt.Errorf("link %s: %w", tmp, lerr)
	}
	if lerr == nil {
		if testHookCreateStep != nil {
			testHookCreateStep("linked")
		}
		if err := faults.At(faults.DBCreateLinked); err != nil {
			return err // the deferred unlink removes the temp's name
		}
	}
	// After the link the temporary name is a second name of meta.db; after
	// EEXIST (another writer won, and its file is the one to open) it names
	// an orphan. Either way it goes.
	unlinked = true
	if err := w.unlink(tmp); err != nil {
		return fmt.Errorf("unlink %s: %w", tmp, err)
	}
	if exists {
		return nil
	}
	// The link is durable only once the directory is: without this a
	// crash could lose a meta.db whose first commit was acknowledged.
	if err := w.syncDir(); err != nil {
		return fmt.Errorf("sync directory: %w", err)
	}
	return nil
}

// newTemp makes a meta.db temp under a new random name, its flock held
// (createLockedBy). A temp taken for debris before its creator had its
// flock (a creator stalled past createLockWait, TakeTemp) is made again
// under another name, until deadline.
func newTemp(dirfd int, deadline time.Time) (string, int, error) {
	for {
		tmp := tempName()
		fd, err := createLockedBy(dirfd, tmp, deadline)
		if errors.Is(err, errTempTaken) && time.Now().Before(deadline) {
			continue
		}
		if err != nil {
			return "", -1, fmt.Errorf("%s: %w", tmp, err)
		}
		return tmp, fd, nil
	}
}

// errTempTaken is createThenLockBy's temp removed by a look that took it
// for debris before its flock was had.
var errTempTaken = errors.New("the temp was taken for debris before its flock was had")

// tempName returns a new random name for a meta.db under construction.
func tempName() string {
	var rnd [8]byte
	rand.Read(rnd[:])
	return TempPrefix + hex.EncodeToString(rnd[:])
}

// beforeWriteError carries the error of Options.BeforeWrite out of the
// open unwrapped: it is the caller's own.
type beforeWriteError struct{ err error }

func (e beforeWriteError) Error() string { return e.err.Error() }
func (e beforeWriteError) Unwrap() error { return e.err }

// testHookBeforeLink lets a test put a rival meta.db in place between the
// temporary file's commit and its link.
var testHookBeforeLink func()

// testHookCreateStep lets a test look at the temp at the steps of its
// creation named: "created" (the file made, bbolt not yet at it),
// "initialised" (bbolt's schema committed), "linked" (meta.db is the
// temp's file, whose name is not yet removed).
var testHookCreateStep func(step string)

// testHookNoTmpfile makes Linux's createLocked take its fallback,
// createThenLock, as on a file system without O_TMPFILE (NFS) and on
// every other system: no file system the tests run on lacks it.
var testHookNoTmpfile bool

// initFile lets bbolt initialise the empty file f and migrates it to
// SchemaVersion, and returns bbolt still open: its Close lets go of the
// flock it took, which create holds until the temp's name is gone. bbolt
// gets a duplicate descriptor because its Close closes what it was given,
// and f is still needed for the fsync.
func initFile(f *os.File, tmp string, now time.Time) (*bolt.DB, error) {
	dup, err := unix.FcntlInt(f.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("dup %s: %w", tmp, err)
	}
	bopts := &bolt.Options{
		Timeout:      time.Second, // nothing else knows the name; never waited on
		NoStatistics: true,
		PageSize:     PageSize,
		OpenFile: func(string, int, os.FileMode) (*os.File, error) {
			return os.NewFile(uintptr(dup), tmp), nil
		},
	}
	var bdb *bolt.DB
	err = guard(func() error {
		bdb, err = bolt.Open(tmp, 0o600, bopts)
		if err != nil { // bbolt has closed dup
			return fmt.Errorf("init %s: %w", tmp, err)
		}
		err = bdb.Update(func(tx *bolt.Tx) error {
			_, err := migrate(tx, migrations, now)
			return err
		})
		if err != nil {
			return fmt.Errorf("init %s: %w", tmp, err)
		}
		return nil
	})
	if err != nil {
		if bdb != nil {
			guard(bdb.Close)
		}
		return nil, err
	}
	return bdb, nil
}

// createThenLock is createThenLockBy with no deadline but its own second.
func createThenLock(dirfd int, name string) (int, error) {
	return createThenLockBy(dirfd, name, time.Now().Add(time.Second))
}

// createThenLockBy makes a new file at name in dirfd and takes its flock
// right after: between the two, the file has its name and no lock, and a
// name a look removed meanwhile (TakeTemp) is errTempTaken.
// O_EXCL|O_NOFOLLOW makes a file or link planted at the name fail the
// create instead of being written through. The flock is waited for a
// second at most, and not past deadline, an open's: its LockTimeout
// bounds the whole open.
func createThenLockBy(dirfd int, name string, deadline time.Time) (int, error) {
	fd, err := openat(dirfd, name, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return -1, err
	}
	if err := fsat.Created(dirfd, fd, 0o600, name); err != nil {
		unix.Close(fd)
		unix.Unlinkat(dirfd, name, 0)
		return -1, err
	}
	if testHookCreateStep != nil {
		testHookCreateStep("named")
	}
	// Not had at once only when a look (check's, repair's) holds it that
	// instant: waited for, briefly.
	if brief := time.Now().Add(createLockWait); brief.Before(deadline) {
		deadline = brief
	}
	if err := flockUntil(context.Background(), fd, true, deadline); err != nil {
		unix.Close(fd)
		unix.Unlinkat(dirfd, name, 0)
		return -1, fmt.Errorf("flock: %w", err)
	}
	// A look that found the name unlocked for longer than createLockWait
	// took it for debris and removed it, holding the flock that was just
	// had (TakeTemp): the file is no one's now.
	switch taken, err := namesNoLonger(dirfd, name, fd); {
	case err != nil:
		unix.Close(fd)
		unix.Unlinkat(dirfd, name, 0)
		return -1, err
	case taken:
		unix.Close(fd)
		return -1, errTempTaken
	}
	return fd, nil
}

// namesNoLonger reports whether dirfd's entry name is no longer fd's file:
// nothing at the name, or another file (the name not followed). It is
// fsat.Moved for a raw descriptor.
func namesNoLonger(dirfd int, name string, fd int) (bool, error) {
	var own, now unix.Stat_t
	if _, err := fsat.IgnoringEINTR(func() (struct{}, error) { return struct{}{}, unix.Fstat(fd, &own) }); err != nil {
		return false, fmt.Errorf("fstat %s: %w", name, err)
	}
	_, err := fsat.IgnoringEINTR(func() (struct{}, error) {
		return struct{}{}, unix.Fstatat(dirfd, name, &now, unix.AT_SYMLINK_NOFOLLOW)
	})
	switch {
	case err == unix.ENOENT:
		return true, nil
	case err != nil:
		return false, fmt.Errorf("lstat %s: %w", name, err)
	}
	return now.Dev != own.Dev || now.Ino != own.Ino, nil
}

// createLockWait bounds how long createThenLockBy waits for the flock of
// the temp it has just made: a temp that has had its name this long with
// no flock is taken for debris (TakeTemp), and a creator stalled that long
// makes its temp again.
const createLockWait = time.Second

// TakeTemp judges the meta.db temp name in dir (TempPrefix) for a caller
// about to remove it: when it is debris, it returns the temp open with a
// shared flock held, which keeps its creator's exclusive one out; when it
// is a creation in flight, which is to be left (its creator holds its
// flock), nil and no error. Where the temp was made before it was locked
// (every system but Linux, and Linux on a file system without O_TMPFILE,
// NFS among them), the temp is found between the two empty and younger
// than createLockWait; it is asked again, 1 ms apart doubling to 25 ms,
// until it is locked or gone, or its creator would have given up (at most
// createLockWait). A name gone since the listing is fsat.SharedFlockAt's
// ENOENT: neither in flight nor debris.
//
// The caller removes the name and only then closes the file, letting go
// of its flock first (fsat.CloseFlocked). A creator
// stalled between its create and its flock for longer than createLockWait
// (a starved process) is taken for debris, and, once it has the flock,
// finds its name gone and makes its temp again under another
// (createThenLockBy): the flock held through the removal is what keeps it
// from finding the name still there an instant before it goes, so a
// removal never fails a creation.
func TakeTemp(dir *os.File, name string) (*os.File, error) {
	// A clock set back makes a temp's age say nothing: it is asked no
	// longer than a creator waits, whatever its mtime.
	deadline := time.Now().Add(createLockWait)
	pause := time.Millisecond
	for {
		f, err := fsat.SharedFlockAt(dir, name)
		if f == nil || err != nil {
			return nil, err
		}
		st, err := fstatTaken(f)
		if err != nil {
			fsat.CloseFlocked(f)
			return nil, err
		}
		now := time.Now()
		if st.Size != 0 || now.Sub(fsat.ModTime(&st)) >= createLockWait || !now.Before(deadline) {
			return f, nil
		}
		fsat.CloseFlocked(f)
		time.Sleep(min(pause, deadline.Sub(now)))
		pause = min(2*pause, 25*time.Millisecond)
	}
}

// fstatTaken is fsat.Fstat for TakeTemp; a variable so that a test can
// stand in for a file system whose fstat fails (EIO, a network one gone).
var fstatTaken = fsat.Fstat

// TempInFlight reports whether the meta.db temp name in dir is a creation
// in flight, which a look must leave, rather than debris: TakeTemp for a
// caller that removes nothing.
func TempInFlight(dir *os.File, name string) (bool, error) {
	f, err := TakeTemp(dir, name)
	if f != nil {
		fsat.CloseFlocked(f)
	}
	return f == nil && err == nil, err
}
