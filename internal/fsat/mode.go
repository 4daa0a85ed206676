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

// Moder makes a mode change and the fsync that makes it durable: a
// chmod is metadata of the inode, on disk only once that inode is
// fsynced. durable.FS is one (its Chmod and SyncFile); nil is the system
// calls themselves (Chmod, and (*os.File).Sync).
type Moder interface {
	Chmod(f *os.File, mode uint32) error
	SyncFile(f *os.File) error
}

// system is the Moder nil stands for: the system calls.
type system struct{}

func (system) Chmod(f *os.File, mode uint32) error { return Chmod(f, mode) }
func (system) SyncFile(f *os.File) error           { return f.Sync() }

// orSystem is m, or system for nil.
func orSystem(m Moder) Moder {
	if m == nil {
		return system{}
	}
	return m
}

// Chmod sets the mode of what f is open on, f an O_PATH descriptor
// (OpenDirUnread's, or AddOwnerBitsAt's) or any other (chmodEntry).
func Chmod(f *os.File, mode uint32) error {
	if err := chmodEntry(int(f.Fd()), mode); err != nil {
		return &os.PathError{Op: "chmod", Path: f.Name(), Err: err}
	}
	return nil
}

// AddOwnerBitsAt gives dir's entry name, a directory or a regular file
// that uid owns (-1: whoever owns it), the owner's bits of bits that its
// mode lacks, through m, and returns its mode before (permission bits
// only). It works on one inode: what it opened, without following a
// link, is what it stats and chmods, so a name swapped in between can
// never be given the mode of what was there before (setuid bits with
// it). Anything else at the name (a link, a FIFO, another user's file
// that lacks the bits) is left as it is: ErrNotTheOne. A mode given is
// fsynced (through m) before it returns: check --repair says it mended
// it, and a power cut must not take it back (durmode44). It is how check
// --repair gives the owner back what an older sessdb's umask, or a
// chmod, took.
func AddOwnerBitsAt(m Moder, dir *os.File, name string, bits uint32, uid int) (before uint32, err error) {
	before, _, err = addOwnerBitsAt(orSystem(m), int(dir.Fd()), name, bits, uid, false, false, Join(dir, name))
	return before, err
}

// AddOwnerBitsToOneAt is AddOwnerBitsAt for an entry a look found to be
// a directory (isDir) or a regular file with one name: what the inode
// opened is must be that too, or it is ErrNotTheOne, its mode left. A
// regular file swapped in at a directory's name since the look, a
// directory at a file's, or a file with a second name (whose mode the
// file at that other name would share) is never given the bits.
func AddOwnerBitsToOneAt(m Moder, dir *os.File, name string, bits uint32, uid int, isDir bool) (before uint32, err error) {
	before, _, err = addOwnerBitsAt(orSystem(m), int(dir.Fd()), name, bits, uid, isDir, !isDir, Join(dir, name))
	return before, err
}

// MendDirModeAt is AddOwnerBitsAt for the directory name in dir that also
// takes the bits drop away in the same chmod (the others' write bit of a
// key dir anyone may write in), but from a directory with the sticky
// bit: never through a link, only the owner uid's directory (else
// ErrNotTheOne), nothing done where it has bits and none of drop.
func MendDirModeAt(m Moder, dir *os.File, name string, bits, drop uint32, uid int) (before uint32, err error) {
	before, _, err = setModeAt(orSystem(m), int(dir.Fd()), name, bits, drop, uid, true, false, Join(dir, name))
	return before, err
}

// AddOwnerBits is AddOwnerBitsAt for a directory or file the caller has
// open (check --repair's sessions root, which it walks by descriptor, or
// opened with OpenDirUnread where it could not list it).
func AddOwnerBits(m Moder, f *os.File, bits uint32) (before uint32, err error) {
	var st unix.Stat_t
	if _, err := IgnoringEINTR(func() (struct{}, error) { return struct{}{}, unix.Fstat(int(f.Fd()), &st) }); err != nil {
		return 0, &os.PathError{Op: "fstat", Path: f.Name(), Err: err}
	}
	mode := uint32(st.Mode) & 0o7777
	want := bits & ownerBits
	if mode&want == want {
		return mode, nil
	}
	return mode, giveBits(orSystem(m), f, mode|want, want, &st, unix.AT_FDCWD, f.Name())
}

// giveBits sets the mode of f, open on the inode st describes, to mode
// through m, checks that it now has want (given), and fsyncs the inode
// through m, reopened (syncable: f may be O_PATH, which fsync refuses;
// name in dirfd is where a regular file is looked for again where it
// cannot be reopened by its descriptor). A nil m is the chmod alone, as
// Mkdir has always given a directory it just made the bits a umask took:
// no fsync is added to a promotion's path.
func giveBits(m Moder, f *os.File, mode, want uint32, st *unix.Stat_t, dirfd int, name string) error {
	if m == nil {
		if err := Chmod(f, mode); err != nil {
			return err
		}
		return given(int(f.Fd()), want, st, f.Name())
	}
	if err := m.Chmod(f, mode); err != nil {
		return err
	}
	if err := given(int(f.Fd()), want, st, f.Name()); err != nil {
		return err
	}
	sf, err := syncable(f, st, dirfd, name)
	if err != nil {
		return err
	}
	defer sf.Close()
	if err := m.SyncFile(sf); err != nil {
		return &os.PathError{Op: "fsync", Path: f.Name(), Err: err}
	}
	return nil
}

// syncable opens for reading the inode f is open on (st its fstat), so
// that it can be fsynced: f may be O_PATH, which fsync refuses. A
// directory is opened as "." in itself: never a link, always the same
// inode. A regular file is reopened by its descriptor where the system
// can (reopenFile), else at name in dirfd, never through a link; either
// way it is kept only if it is the same inode: otherwise the file given
// the bits is no longer at its name, and ErrNotTheOne says so (its mode
// is not said durable). The owner has the read bit now (every mode the
// store and the fleet need includes it).
func syncable(f *os.File, st *unix.Stat_t, dirfd int, name string) (*os.File, error) {
	var fd int
	var err error
	if IsDir(st) {
		fd, err = IgnoringEINTR(func() (int, error) {
			return unix.Openat(int(f.Fd()), ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		})
	} else {
		fd, err = reopenFile(int(f.Fd()), dirfd, name)
	}
	if err != nil {
		if err == unix.ELOOP || err == unix.ENXIO {
			err = ErrNotTheOne
		}
		return nil, &os.PathError{Op: "open", Path: f.Name(), Err: err}
	}
	sf := os.NewFile(uintptr(fd), f.Name())
	var now unix.Stat_t
	if _, err := IgnoringEINTR(func() (struct{}, error) { return struct{}{}, unix.Fstat(fd, &now) }); err != nil {
		sf.Close()
		return nil, &os.PathError{Op: "fstat", Path: f.Name(), Err: err}
	}
	if now.Dev != st.Dev || now.Ino != st.Ino {
		sf.Close()
		return nil, &os.PathError{Op: "open", Path: f.Name(), Err: ErrNotTheOne}
	}
	return sf, nil
}

// openAtNoFollow opens name in dirfd for reading, never through a link,
// and without blocking on, or taking as a terminal, what else may have
// been put there.
func openAtNoFollow(dirfd int, name string) (int, error) {
	return IgnoringEINTR(func() (int, error) {
		return unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	})
}

// addOwnerBitsAt opens name in dirfd once (openEntry: O_PATH on Linux,
// which needs none of its bits), and gives that inode the owner's bits of
// bits it lacks, when it is a directory (dirOnly), a regular file with
// one name (oneFile), or a directory or a regular file, that uid owns
// (-1: anyone); else it returns ErrNotTheOne with the mode it found (one
// that lacks no bit is left, whoever owns it). The chmod is by the
// descriptor (chmodEntry), through m, and fsynced (giveBits; a nil m, for
// Mkdir, does neither).
func addOwnerBitsAt(m Moder, dirfd int, name string, bits uint32, uid int, dirOnly, oneFile bool, path string) (uint32, unix.Stat_t, error) {
	return setModeAt(m, dirfd, name, bits, 0, uid, dirOnly, oneFile, path)
}

// setModeAt is addOwnerBitsAt that also takes drop's bits away, in the
// same chmod.
func setModeAt(m Moder, dirfd int, name string, bits, drop uint32, uid int, dirOnly, oneFile bool, path string) (uint32, unix.Stat_t, error) {
	var st unix.Stat_t
	fd, err := openEntry(dirfd, name, dirOnly)
	if err != nil {
		if err == unix.ELOOP || err == unix.ENOTDIR || err == unix.ENXIO || err == unix.EOPNOTSUPP {
			return 0, st, ErrNotTheOne
		}
		return 0, st, &os.PathError{Op: "open", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	if _, err := IgnoringEINTR(func() (struct{}, error) { return struct{}{}, unix.Fstat(fd, &st) }); err != nil {
		return 0, st, &os.PathError{Op: "fstat", Path: path, Err: err}
	}
	mode := uint32(st.Mode) & 0o7777
	if !IsDir(&st) && (dirOnly || !IsRegular(&st)) || oneFile && (!IsRegular(&st) || st.Nlink != 1) {
		return mode, st, ErrNotTheOne
	}
	if mode&unix.S_ISVTX != 0 {
		drop = 0 // a sticky dir's others may not replace the owner's entries
	}
	want := bits & ownerBits
	if mode&want == want && mode&drop == 0 {
		return mode, st, nil
	}
	// Asked only before a change: a file system that shows another
	// owner than the maker (an id-mapped FUSE or NFS mount) is judged
	// only where a chmod would be made.
	if uid >= 0 && st.Uid != uint32(uid) {
		return mode, st, ErrNotTheOne
	}
	return mode, st, giveBits(m, f, (mode|want)&^drop, want, &st, dirfd, name)
}

// fchmodat and fchmod are unix's; variables so that a test can stand in
// for a Linux kernel older than fchmodat2 (or a seccomp filter that
// refuses it), and for a file system that cannot chmod.
var (
	fchmodat = unix.Fchmodat
	fchmod   = unix.Fchmod
)
