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
	orMode(&st.Mode, want)
	return nil
}

// orMode sets bits in a Stat_t's Mode, 32 bits on Linux, 16 on macOS and
// FreeBSD.
func orMode[T ~uint16 | ~uint32](m *T, bits uint32) { *m |= T(bits) }

// AddOwnerBitsAt gives dir's entry name, a directory or a regular file,
// the owner's bits of bits that its mode lacks, without following a link,
// and returns its mode before (permission bits only). Anything else at
// the name (a link, a FIFO) is left as it is, with no error: the caller's
// open refuses it. The mode is changed with fchmodat without following a
// link (fchmodat2 on Linux 6.6 and later; macOS and FreeBSD have it); an
// older Linux kernel has no such call (or a seccomp filter refuses it),
// and the name is opened (O_NOFOLLOW) and fchmodded instead, which needs
// the owner's read bit, or root. It is how check --repair gives the owner
// back what an older sessdb's umask, or a chmod, took.
func AddOwnerBitsAt(dir *os.File, name string, bits uint32) (before uint32, err error) {
	return addOwnerBitsAt(int(dir.Fd()), name, bits, Join(dir, name))
}

// AddOwnerBits is AddOwnerBitsAt for a directory or file the caller has
// open (check --repair's sessions root, which it walks by descriptor).
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
	if err := fchmod(int(f.Fd()), mode|want); err != nil {
		return mode, &os.PathError{Op: "chmod", Path: f.Name(), Err: err}
	}
	return mode, nil
}

func addOwnerBitsAt(dirfd int, name string, bits uint32, path string) (uint32, error) {
	var st unix.Stat_t
	if _, err := IgnoringEINTR(func() (struct{}, error) {
		return struct{}{}, unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
	}); err != nil {
		return 0, &os.PathError{Op: "lstat", Path: path, Err: err}
	}
	mode := uint32(st.Mode) & 0o7777
	want := bits & ownerBits
	if !IsDir(&st) && !IsRegular(&st) || mode&want == want {
		return mode, nil
	}
	err := fchmodat(dirfd, name, mode|want, unix.AT_SYMLINK_NOFOLLOW)
	// EPERM: a seccomp filter that predates fchmodat2 refuses it so (a
	// container's default profile may); a caller that may not chmod the
	// file at all is refused again by the fchmod.
	if err == unix.EOPNOTSUPP || err == unix.ENOSYS || err == unix.EPERM {
		var fd int
		fd, err = IgnoringEINTR(func() (int, error) {
			return unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
		})
		if err == nil {
			err = fchmod(fd, mode|want)
			unix.Close(fd)
		}
	}
	if err != nil {
		return mode, &os.PathError{Op: "chmod", Path: path, Err: err}
	}
	return mode, nil
}

// fchmodat and fchmod are unix's; variables so that a test can stand in
// for a Linux kernel older than fchmodat2, and for a file system that
// cannot chmod.
var (
	fchmodat = unix.Fchmodat
	fchmod   = unix.Fchmod
)
