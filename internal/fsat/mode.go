package fsat

import (
	"os"

	"golang.org/x/sys/unix"
)

// What sessdb creates it must open again: a key dir, a meta.db, a
// transcript, a job's session dir. The process's umask may take the
// owner's own bits from the mode asked for (0177 leaves a directory its
// owner cannot enter; 0277 a meta.db no writer can open again), and the
// store would then have made a key that every later resolve fails on and
// no promote can write. So every file and directory this package creates
// gets back the owner's bits of the mode its caller asked for; the
// umask's say over the group's and the others' bits is kept. The sessdb
// command does more, once, at its start: it clears those bits from its
// umask, which a library cannot do under its caller's goroutines.

// ownerBits is the part of a mode the umask may not take.
const ownerBits = 0o700

// restoreOwnerBits gives fd, a file the caller has just created with perm
// (st its fstat), the owner's bits of perm that the umask took. The mode
// is asked only when it lacks them: a file system that cannot chmod (some
// FUSE and SMB mounts) is never asked to under a usual umask.
func restoreOwnerBits(fd int, st *unix.Stat_t, perm uint32, name string) error {
	mode := uint32(st.Mode) & 0o7777
	want := perm & ownerBits
	if mode&want == want {
		return nil
	}
	if err := fchmod(fd, mode|want); err != nil {
		return &os.PathError{Op: "chmod", Path: name, Err: err}
	}
	return given(fd, want, st, name)
}

// given fstats fd again after a chmod that gave it want, into st, and
// returns ErrModeKept where its mode still lacks them: a chmod answered
// with success that changed nothing (vfat mounted quiet, CIFS without
// unix extensions, a seccomp filter that answers 0) would otherwise be
// taken for bits given, and check --repair said it mended a mode it had
// not (ownrev3).
func given(fd int, want uint32, st *unix.Stat_t, path string) error {
	if _, err := IgnoringEINTR(func() (struct{}, error) { return struct{}{}, unix.Fstat(fd, st) }); err != nil {
		return &os.PathError{Op: "fstat", Path: path, Err: err}
	}
	if uint32(st.Mode)&want != want {
		return &os.PathError{Op: "chmod", Path: path, Err: ErrModeKept}
	}
	return nil
}

// AddOwnerBitsAt gives dir's entry name, a directory or a regular file
// that uid owns (-1: whoever owns it), the owner's bits of bits that its
// mode lacks, and returns its mode before (permission bits only). It
// works on one inode: what it opened, without following a link, is what
// it stats and chmods, so a name swapped in between can never be given
// the mode of what was there before (setuid bits with it). Anything else
// at the name (a link, a FIFO, another user's file that lacks the bits)
// is left as it is: ErrNotTheOne. It is how check --repair gives the
// owner back what an older sessdb's umask, or a chmod, took.
func AddOwnerBitsAt(dir *os.File, name string, bits uint32, uid int) (before uint32, err error) {
	before, _, err = addOwnerBitsAt(int(dir.Fd()), name, bits, uid, false, Join(dir, name))
	return before, err
}

// AddOwnerBits is AddOwnerBitsAt for a directory or file the caller has
// open (check --repair's sessions root, which it walks by descriptor, or
// opened with OpenDirUnread where it could not list it).
func AddOwnerBits(f *os.File, bits uint32) (before uint32, err error) {
	var st unix.Stat_t
	if _, err := IgnoringEINTR(func() (struct{}, error) { return struct{}{}, unix.Fstat(int(f.Fd()), &st) }); err != nil {
		return 0, &os.PathError{Op: "fstat", Path: f.Name(), Err: err}
	}
	mode := uint32(st.Mode) & 0o7777
	want := bits & ownerBits
	if mode&want == want {
		return mode, nil
	}
	// chmodEntry, not fchmod: f may be OpenDirUnread's (O_PATH).
	if err := chmodEntry(int(f.Fd()), mode|want); err != nil {
		return mode, &os.PathError{Op: "chmod", Path: f.Name(), Err: err}
	}
	return mode, given(int(f.Fd()), want, &st, f.Name())
}

// addOwnerBitsAt opens name in dirfd once (openEntry: O_PATH on Linux,
// which needs none of its bits), and gives that inode the owner's bits of
// bits it lacks, when it is a directory (dirOnly), or a directory or a
// regular file, that uid owns (-1: anyone); else it returns ErrNotTheOne
// with the mode it found (one that lacks no bit is left, whoever owns
// it). The chmod is by the descriptor (chmodEntry).
func addOwnerBitsAt(dirfd int, name string, bits uint32, uid int, dirOnly bool, path string) (uint32, unix.Stat_t, error) {
	var st unix.Stat_t
	fd, err := openEntry(dirfd, name, dirOnly)
	if err != nil {
		if err == unix.ELOOP || err == unix.ENOTDIR || err == unix.ENXIO || err == unix.EOPNOTSUPP {
			return 0, st, ErrNotTheOne
		}
		return 0, st, &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	if _, err := IgnoringEINTR(func() (struct{}, error) { return struct{}{}, unix.Fstat(fd, &st) }); err != nil {
		return 0, st, &os.PathError{Op: "fstat", Path: path, Err: err}
	}
	mode := uint32(st.Mode) & 0o7777
	if !IsDir(&st) && (dirOnly || !IsRegular(&st)) {
		return mode, st, ErrNotTheOne
	}
	want := bits & ownerBits
	if mode&want == want {
		return mode, st, nil
	}
	// Asked only before a change: a file system that shows another
	// owner than the maker (an id-mapped FUSE or NFS mount) is judged
	// only where a chmod would be made.
	if uid >= 0 && st.Uid != uint32(uid) {
		return mode, st, ErrNotTheOne
	}
	if err := chmodEntry(fd, mode|want); err != nil {
		return mode, st, &os.PathError{Op: "chmod", Path: path, Err: err}
	}
	return mode, st, given(fd, want, &st, path)
}

// fchmodat and fchmod are unix's; variables so that a test can stand in
// for a Linux kernel older than fchmodat2 (or a seccomp filter that
// refuses it), and for a file system that cannot chmod.
var (
	fchmodat = unix.Fchmodat
	fchmod   = unix.Fchmod
)
