// Package fsat opens, stats, reads, renames and removes names relative to
// a directory descriptor with the *at system calls, one path component at
// a time, so that nothing below a directory the caller opened is ever
// resolved through a link, and a FIFO never blocks an open (ResolvedPath
// alone follows links: it names where a configured path leads, for a
// comparison, and opens nothing). It is sessdb's one copy of that
// plumbing: the calls a signal can interrupt (an open, a read, a lock)
// are retried on EINTR through one helper, IgnoringEINTR, and errors are
// of the form "op path: errno" (*os.PathError or *os.LinkError),
// unwrapping to the errno.
//
// os.Root is not enough for this: it follows a link that stays inside the
// root even when O_NOFOLLOW is passed, for files and for OpenRoot of a
// subdirectory (measured on Go 1.26).
//
// It builds on Linux, macOS and FreeBSD. Where the systems differ, fsat
// makes them say the same thing: a link met by an open is ELOOP on every
// one (FreeBSD says EMLINK).
//
// Caveats, by platform:
//   - RenameNoReplace is one atomic rename on Linux (renameat2
//     RENAME_NOREPLACE) and macOS (renameatx_np RENAME_EXCL). On FreeBSD,
//     and on a Linux or macOS filesystem that refuses those flags, it links
//     the new name and then unlinks the old one: it still never replaces
//     an existing file, but a crash between the two steps leaves the file
//     under both names.
//   - SetMtime works on the descriptor on Linux and FreeBSD (futimens). On
//     macOS, where x/sys/unix has no futimens, it sets the time through the
//     name, without following a link, and checks that the name referred to
//     the open file before and after: a name replaced in between is an
//     error, but the file that was there meanwhile may have had its mtime
//     set.
//   - A socket met by an open is ENXIO on Linux and EOPNOTSUPP on macOS and
//     FreeBSD; ReadSmallFile makes both ErrNotRegular, OpenRaw leaves them.
package fsat

import (
	"errors"
	"os"
	"strings"

	"golang.org/x/sys/unix"

	"sessdb/internal/faults"
)

// openFlags are added to every open below a directory: never follow a link
// at the name, never block on a FIFO, never leak the descriptor into a
// child, never make a terminal the controlling one.
const openFlags = unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_CLOEXEC | unix.O_NOCTTY

// OpenDir is like os.Open for a directory, but returns the raw descriptor's
// file without registering it with the poller. The sessions root and a job
// dir are the operator's and the host's own paths, so a link there is
// followed; names below them are not.
func OpenDir(path string) (*os.File, error) {
	fd, err := IgnoringEINTR(func() (int, error) {
		return unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	})
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return os.NewFile(uintptr(fd), path), nil
}

// OpenDirUnread is like OpenDir, but opens the directory for its own mode
// and the names in it, not to list it: on Linux with O_PATH, which needs
// neither its read bit nor its search bit, so that check can judge, and
// give back (AddOwnerBits), the bits its owner lacks of a sessions root or
// a transcripts dir it could not open. Elsewhere a directory its caller
// may not read does not open (dirOpensUnread).
func OpenDirUnread(path string) (*os.File, error) {
	fd, err := IgnoringEINTR(func() (int, error) { return unix.Open(path, unreadDirFlags, 0) })
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return os.NewFile(uintptr(fd), path), nil
}

// OpenDirAt is like OpenDir, but opens name inside dir without following a
// link. A link or a non-directory at name is ErrNotDir.
func OpenDirAt(dir *os.File, name string) (*os.File, error) {
	fd, err := openat(dir, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		if err == unix.ELOOP || err == unix.ENOTDIR {
			err = ErrNotDir
		}
		return nil, &os.PathError{Op: "open", Path: Join(dir, name), Err: err}
	}
	return os.NewFile(uintptr(fd), Join(dir, name)), nil
}

// OpenRaw is like unix.Openat, but relative to dir, with O_NOFOLLOW,
// O_NONBLOCK, O_CLOEXEC and O_NOCTTY added to flags, and it returns the
// fstat of what it opened, so that the caller decides what it got before
// it reads (a legacy sidecar, a transcript). A file it creates
// (O_CREAT|O_EXCL) has the owner's bits of perm whatever the umask; one
// that cannot be given them is removed, and the error says chmod; made
// by root on Linux, it is given dir's owner (see owner.go). The caller owns fd
// and closes it; on error nothing is left open.
func OpenRaw(dir *os.File, name string, flags int, perm uint32) (fd int, st unix.Stat_t, err error) {
	fd, err = openat(dir, name, flags|openFlags, perm)
	if err != nil {
		return -1, st, &os.PathError{Op: "open", Path: Join(dir, name), Err: err}
	}
	if st, err = IgnoringEINTR(func() (st unix.Stat_t, err error) { return st, unix.Fstat(fd, &st) }); err != nil {
		unix.Close(fd)
		return -1, st, &os.PathError{Op: "fstat", Path: Join(dir, name), Err: err}
	}
	if flags&(unix.O_CREAT|unix.O_EXCL) == unix.O_CREAT|unix.O_EXCL {
		if err := restoreOwnerBits(fd, &st, perm, Join(dir, name)); err != nil {
			unix.Close(fd)
			unix.Unlinkat(int(dir.Fd()), name, 0)
			return -1, st, err
		}
		giveToDirOwner(int(dir.Fd()), fd, &st)
	}
	return fd, st, nil
}

// Created is, for a descriptor of a file the caller has just created in
// dirfd with perm outside this package (db's raw-descriptor create, named
// or not yet), what OpenRaw does for its own: it gives the file back the
// owner's bits of perm that the process's umask took and, made by root,
// dirfd's owner.
func Created(dirfd, fd int, perm uint32, name string) error {
	st, err := IgnoringEINTR(func() (st unix.Stat_t, err error) { return st, unix.Fstat(fd, &st) })
	if err != nil {
		return &os.PathError{Op: "fstat", Path: name, Err: err}
	}
	if err := restoreOwnerBits(fd, &st, perm, name); err != nil {
		return err
	}
	giveToDirOwner(dirfd, fd, &st)
	return nil
}

// NewFile is like os.NewFile, but for a descriptor OpenRaw returned: it
// clears the O_NONBLOCK of a regular file first, which was there only for
// the open of a FIFO, so that os.NewFile does not register a regular file
// with the poller (kqueue on macOS would accept it). It takes fd over, and
// closes it on error.
func NewFile(fd int, st *unix.Stat_t, name string) (*os.File, error) {
	if IsRegular(st) {
		if err := unix.SetNonblock(fd, false); err != nil {
			unix.Close(fd)
			return nil, &os.PathError{Op: "fcntl", Path: name, Err: err}
		}
	}
	return os.NewFile(uintptr(fd), name), nil
}

// OpenAt is OpenRaw followed by NewFile: name inside dir, opened without
// following a link and without blocking on a FIFO. The caller decides on
// Fstat what it got.
func OpenAt(dir *os.File, name string, flags int, perm uint32) (*os.File, error) {
	fd, st, err := OpenRaw(dir, name, flags, perm)
	if err != nil {
		return nil, err
	}
	return NewFile(fd, &st, Join(dir, name))
}

// MkdirAt is like unix.Mkdirat, but an existing name is not an error (it is
// then not checked to be a directory: OpenDirAt does that).
func MkdirAt(dir *os.File, name string, perm uint32) error {
	_, err := MkdirNew(dir, name, perm)
	return err
}

// MkdirNew is MkdirAt that also reports whether it made the directory. A
// directory it makes has the owner's bits of perm whatever the umask (one
// that cannot be given them is removed again, and the error says chmod)
// and, made by root on Linux, dir's owner (see owner.go).
func MkdirNew(dir *os.File, name string, perm uint32) (bool, error) {
	return mkdirat(int(dir.Fd()), name, perm, Join(dir, name))
}

// Mkdir is MkdirNew for a path, whose links are followed but in its last
// component (the job dir: the worker's path, opened with OpenDir). The
// parent is opened first (on Linux O_PATH, which needs none of its
// bits), and the directory made and given its bits relative to it: a
// parent renamed meanwhile changes nothing it does.
func Mkdir(path string, perm uint32) (bool, error) {
	parent, base := SplitLast(path)
	if base == "" || base == "." || base == ".." {
		// A name that is never made (the root, or one that is there
		// whenever its parent is): the system says so.
		return mkdirat(unix.AT_FDCWD, path, perm, path)
	}
	pd, err := IgnoringEINTR(func() (int, error) { return unix.Open(parent, unreadDirFlags, 0) })
	switch {
	case err == unix.EACCES && !dirOpensUnread:
		// A parent that may be written and searched, not read: made by
		// its path, as the system allows.
		return mkdirat(unix.AT_FDCWD, path, perm, path)
	case err != nil:
		return false, &os.PathError{Op: "mkdir", Path: path, Err: err}
	}
	defer unix.Close(pd)
	return mkdirat(pd, base, perm, path)
}

// SplitLast is like filepath.Split, but splits path before its last
// component, trailing slashes dropped, without cleaning it: "a/link/../b"
// is "a/link/.." and "b", as the system reads it (filepath.Dir would clean
// away the link, and name another directory than the one the system
// reaches).
func SplitLast(path string) (parent, base string) {
	trimmed := strings.TrimRight(path, "/")
	if trimmed == "" {
		return path, ""
	}
	i := strings.LastIndexByte(trimmed, '/')
	switch {
	case i < 0:
		return ".", trimmed
	case i == 0:
		return "/", trimmed[1:]
	}
	return trimmed[:i], trimmed[i+1:]
}

// JoinUncleaned joins path and name with one slash, path's trailing
// slashes dropped, without cleaning: "a/link/.." and "b" is
// "a/link/../b", the name the system takes under the link's target's
// parent (filepath.Join would give "a/b", another file). SplitLast's
// inverse.
func JoinUncleaned(path, name string) string {
	return strings.TrimRight(path, "/") + "/" + name
}

// ErrReplaced is a directory made, and not its maker's at its name when
// it was to be given its bits: replaced since (what is there is left
// alone), or on a file system that shows another owner than its maker.
var ErrReplaced = errors.New("not its maker's when it was given its bits (replaced since it was made, or a file system that maps owners)")

// testHookAfterMkdir, when set, runs between a mkdir and the chmod of
// what it made (a test's swap of the name).
var testHookAfterMkdir func(name string)

func mkdirat(dirfd int, name string, perm uint32, path string) (bool, error) {
	uid, tried, err := mkdirAsDirOwner(dirfd, name, perm)
	if !tried {
		uid, err = unix.Geteuid(), unix.Mkdirat(dirfd, name, perm)
	}
	switch err {
	case nil:
	case unix.EEXIST:
		return false, nil
	default:
		return false, &os.PathError{Op: "mkdir", Path: path, Err: err}
	}
	if testHookAfterMkdir != nil {
		testHookAfterMkdir(name)
	}
	// The bits go to the directory made, its maker's: what the parent's
	// owner may have swapped in at the name is left as it is.
	_, _, err = addOwnerBitsAt(nil, dirfd, name, perm, uid, true, false, path)
	switch {
	case err == ErrNotTheOne:
		return false, &os.PathError{Op: "mkdir", Path: path, Err: ErrReplaced}
	case err != nil:
		unix.Unlinkat(dirfd, name, unix.AT_REMOVEDIR)
		return false, err
	}
	return true, nil
}

// RenameAt is like unix.Renameat, but both names are inside dir, and it
// replaces an existing to. The rename is durable only once dir is synced
// (SyncDir).
func RenameAt(dir *os.File, from, to string) error {
	if err := unix.Renameat(int(dir.Fd()), from, int(dir.Fd()), to); err != nil {
		return &os.LinkError{Op: "rename", Old: Join(dir, from), New: Join(dir, to), Err: err}
	}
	return nil
}

// UnlinkAt is like unix.Unlinkat with no flags: it removes name inside dir,
// the link itself if it is one; a directory is an error, and so is ENOENT.
func UnlinkAt(dir *os.File, name string) error {
	if err := unix.Unlinkat(int(dir.Fd()), name, 0); err != nil {
		return &os.PathError{Op: "unlink", Path: Join(dir, name), Err: err}
	}
	return nil
}

// RmdirAt is like unix.Unlinkat with AT_REMOVEDIR: it removes the empty
// directory name inside dir.
func RmdirAt(dir *os.File, name string) error {
	if err := unix.Unlinkat(int(dir.Fd()), name, unix.AT_REMOVEDIR); err != nil {
		return &os.PathError{Op: "rmdir", Path: Join(dir, name), Err: err}
	}
	return nil
}

// Remove is like os.Remove, but for a name inside dir: it removes whatever
// is there, the link itself if it is one, an empty directory too, and
// nothing is not an error (a re-run, or a rival, got there first). A
// directory with entries is left, with an error that unwraps to ENOTEMPTY
// (or EEXIST, which some systems say instead).
func Remove(dir *os.File, name string) error {
	err := unix.Unlinkat(int(dir.Fd()), name, 0)
	// Linux says EISDIR for a directory, macOS and FreeBSD say EPERM.
	if err == unix.EISDIR || err == unix.EPERM {
		if ferr := faults.At(faults.FsatRemoveBeforeDirLook); ferr != nil {
			return ferr
		}
		st, serr := LstatAt(dir, name)
		switch {
		case serr == nil && IsDir(&st):
			err = unix.Unlinkat(int(dir.Fd()), name, unix.AT_REMOVEDIR)
		case errors.Is(serr, unix.ENOENT):
			err = unix.ENOENT // removed since the unlink: a rival got there first
		}
	}
	if err != nil && err != unix.ENOENT {
		return &os.PathError{Op: "remove", Path: Join(dir, name), Err: err}
	}
	return nil
}

// LstatAt is like os.Lstat, but of the single name inside dir.
func LstatAt(dir *os.File, name string) (unix.Stat_t, error) {
	st, err := IgnoringEINTR(func() (st unix.Stat_t, err error) {
		return st, unix.Fstatat(int(dir.Fd()), name, &st, unix.AT_SYMLINK_NOFOLLOW)
	})
	if err != nil {
		return st, &os.PathError{Op: "lstat", Path: Join(dir, name), Err: err}
	}
	return st, nil
}

// AccessAt is like unix.Faccessat, but of the single name inside dir
// (a link judged itself, never followed), by this process's effective
// ids, as an open or a rename of the name would be judged: a mode its
// runner lacks is EACCES (an ACL's say included), a write on a read-only
// mount EROFS, on an immutable file EPERM. A dry run asks it so as not
// to promise a change its run would be refused (what it cannot tell: an
// ACL a file system checks only on the server, a sticky dir's rule).
func AccessAt(dir *os.File, name string, mode uint32) error {
	_, err := IgnoringEINTR(func() (struct{}, error) {
		return struct{}{}, accessAt(int(dir.Fd()), name, mode)
	})
	if err != nil {
		return &os.PathError{Op: "access", Path: Join(dir, name), Err: err}
	}
	return nil
}

// SaidAs is err, a look's refusal (AccessAt's "access <path>"), said as
// the call op it stands for would say it ("open <path>"): a dry run that
// fails a name its run would fail says it in the run's words, the same
// path and cause. An error that is no *os.PathError is err as it is.
func SaidAs(op string, err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return &os.PathError{Op: op, Path: pe.Path, Err: pe.Err}
	}
	return err
}

// accessNoFollow judges name, not a link, as the kernel would open it,
// by the effective ids: faccessat with AT_EACCESS alone (what every
// system takes: FreeBSD refuses AT_SYMLINK_NOFOLLOW there with EINVAL),
// after an lstat that says it is no link. A link's own mode lets all;
// one swapped in between the two is followed, a misjudgement of a look
// that changes nothing. faccess is the faccessat to call.
func accessNoFollow(dirfd int, name string, mode uint32, flags int, faccess func(int, string, uint32, int) error) error {
	var st unix.Stat_t
	if err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		return nil
	}
	return faccess(dirfd, name, mode, flags)
}

// Moved reports whether f, opened as dir's entry name, is no longer there:
// nothing at the name, or another file (the name not followed), or f
// removed where its file system no longer answers for it (IsGone: a FUSE
// daemon that works by path, NFS). A stat that fails otherwise is its
// error, never "not moved": a caller that took it for "still there" would
// write into a dir moved aside (check --quarantine's, which promises
// nothing in it changes).
func Moved(dir *os.File, name string, f *os.File) (bool, error) {
	held, err := fstatHeld(f)
	if IsGone(err) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	now, err := LstatAt(dir, name)
	switch {
	case IsNotExist(err):
		return true, nil
	case err != nil:
		return false, err
	}
	return now.Dev != held.Dev || now.Ino != held.Ino, nil
}

// fstatHeld is Fstat for Moved; a variable so that a test can stand in
// for a file system that no longer answers for a removed file.
var fstatHeld = Fstat

// Fstat is like (*os.File).Stat, but returns the system's own record.
func Fstat(f *os.File) (unix.Stat_t, error) {
	st, err := IgnoringEINTR(func() (st unix.Stat_t, err error) {
		return st, unix.Fstat(int(f.Fd()), &st)
	})
	if err != nil {
		return st, &os.PathError{Op: "fstat", Path: f.Name(), Err: err}
	}
	return st, nil
}

// SyncDir is like (*os.File).Sync for a directory: it makes the entries
// created, renamed or removed in dir durable; a rename is not durable until
// its directory is.
func SyncDir(dir *os.File) error {
	if err := dir.Sync(); err != nil {
		return &os.PathError{Op: "fsync", Path: dir.Name(), Err: err}
	}
	return nil
}

// Flock is like unix.Flock on f's descriptor, but retries EINTR. With
// LOCK_NB a lock held elsewhere is EWOULDBLOCK.
func Flock(f *os.File, how int) error {
	_, err := IgnoringEINTR(func() (struct{}, error) { return struct{}{}, unix.Flock(int(f.Fd()), how) })
	if err != nil {
		return &os.PathError{Op: "flock", Path: f.Name(), Err: err}
	}
	return nil
}

// CloseFlocked is like f.Close, but lets go of f's flock first. Closing
// alone may not: a flock is the open file description's, and a child the
// process forks holds a copy of every descriptor until it execs, which
// keeps the flock held that long (a worker that starts a container while
// it resolves, a look beside it). Unlocking a file that holds no flock
// does nothing.
func CloseFlocked(f *os.File) error {
	Flock(f, unix.LOCK_UN)
	return f.Close()
}

// SharedFlockAt is like flock(2) with LOCK_SH|LOCK_NB asked of dir's
// entry name: it opens the name without following it, takes a shared
// flock without waiting, and returns the file with the flock held, or nil
// and no error when another open file holds the exclusive one. Shared, it
// keeps out an exclusive holder (a creator, a writer) and no other look.
// A name that cannot be opened is the open's error (ENOENT: gone), which
// says nothing of the flock (no descriptor left), and so is a flock that
// fails but for being held. A flock had on a file no longer at the name
// once had is ENOENT too: a creator that lets go of its file's flock only
// once the file's name is gone (db's meta.db temp, linked into place and
// unlinked, or removed) may do so between the open and the flock, and the
// file then had, that no name leads to, is not one left at the name.
// Taken for one, a creation that went well was store's check's stray temp
// (its TestChaos), and a temp its creator removed a removal's.
func SharedFlockAt(dir *os.File, name string) (*os.File, error) {
	f, err := OpenAt(dir, name, unix.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	if TestHookFlockedNowOpened != nil {
		TestHookFlockedNowOpened(name)
	}
	switch err := Flock(f, unix.LOCK_SH|unix.LOCK_NB); {
	case errors.Is(err, unix.EWOULDBLOCK):
		f.Close()
		return nil, nil
	case err != nil:
		f.Close()
		return nil, err // says nothing of the flock, as an open that failed
	}
	switch moved, err := Moved(dir, name, f); {
	case err != nil:
		CloseFlocked(f)
		return nil, err
	case moved:
		CloseFlocked(f)
		return nil, &os.PathError{Op: "flock", Path: Join(dir, name), Err: unix.ENOENT}
	}
	return f, nil
}

// FlockedNow reports whether another open file holds the exclusive flock
// of dir's entry name, with SharedFlockAt's errors. It only asks: it lets
// go of the shared flock at once, so that it keeps a holder of the
// exclusive one out no longer than the two calls (CloseFlocked).
func FlockedNow(dir *os.File, name string) (held bool, err error) {
	f, err := SharedFlockAt(dir, name)
	if f != nil {
		CloseFlocked(f)
	}
	return f == nil && err == nil, err
}

// TestHookFlockedNowOpened is called, when set, with the name between
// SharedFlockAt's open and its flock (FlockedNow's too), for sessdb's
// tests (store's, migrate's) to act there: a creator that removes its
// temp, or links it into place and unlinks it, and lets go. Nothing else
// sets it; a test that does runs alone and clears it when done.
var TestHookFlockedNowOpened func(name string)

// ReadDirNames is like (*os.File).Readdirnames(-1), but reads from a
// duplicate descriptor so that dir's own offset stays untouched, and
// follows nothing.
func ReadDirNames(dir *os.File) ([]string, error) {
	d, err := OpenDirAt(dir, ".")
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return d.Readdirnames(-1)
}

// IsRegular reports whether st describes a regular file.
func IsRegular(st *unix.Stat_t) bool { return st.Mode&unix.S_IFMT == unix.S_IFREG }

// IsDir reports whether st describes a directory.
func IsDir(st *unix.Stat_t) bool { return st.Mode&unix.S_IFMT == unix.S_IFDIR }

// Kind names st's file type for a report: "regular file", "symbolic link",
// "directory", "FIFO", "socket" or "device".
func Kind(st *unix.Stat_t) string {
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		return "regular file"
	case unix.S_IFLNK:
		return "symbolic link"
	case unix.S_IFDIR:
		return "directory"
	case unix.S_IFIFO:
		return "FIFO"
	case unix.S_IFSOCK:
		return "socket"
	}
	return "device"
}

// Join is like filepath.Join(dir.Name(), name) for a single name, without
// cleaning: the path shown in errors.
func Join(dir *os.File, name string) string {
	if name == "." {
		return dir.Name()
	}
	return dir.Name() + "/" + name
}

// IsNotExist reports whether err says that a name does not exist (ENOENT).
func IsNotExist(err error) bool { return errors.Is(err, unix.ENOENT) }

// IsGone reports whether err, from a call on a file or directory held
// open, says it was removed: ENOENT; ESTALE where an NFS client held it
// when another host removed it. A local file system still answers such a
// call (an fstat shows no links left), but one that goes by name does
// not: a FUSE daemon that works by path says ENOENT.
func IsGone(err error) bool { return IsNotExist(err) || errors.Is(err, unix.ESTALE) }

// IsNoSpace reports whether err is a write refused for want of room: the
// file system full (ENOSPC) or the user's or project's quota (EDQUOT).
func IsNoSpace(err error) bool { return errors.Is(err, unix.ENOSPC) || errors.Is(err, unix.EDQUOT) }

// openat is unix.Openat relative to dir, retrying EINTR (an open of a FIFO
// or on a slow filesystem can be interrupted), with a link at name reported
// as ELOOP on every system.
func openat(dir *os.File, name string, flags int, perm uint32) (int, error) {
	fd, err := IgnoringEINTR(func() (int, error) { return unix.Openat(int(dir.Fd()), name, flags, perm) })
	return fd, linkErrno(err)
}

// IgnoringEINTR is sessdb's EINTR retry (package db's raw-descriptor
// opens, fsyncs and link use it too): it is like calling f, but repeats f
// while f is interrupted by a signal (EINTR), as the standard library's
// own system-call wrappers do. This package's opens, stats, locks and
// reads go through it, as os.Open, os.Lstat and their kin do. Its renames,
// links and removals call the system directly: where one is interrupted
// (a network or FUSE filesystem) it fails with EINTR, and its caller
// reports it, where os.Rename, os.Link and os.Remove would retry.
func IgnoringEINTR[T any](f func() (T, error)) (T, error) {
	for {
		v, err := f()
		if err != unix.EINTR {
			return v, err
		}
	}
}
