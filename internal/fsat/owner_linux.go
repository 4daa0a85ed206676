package fsat

import (
	"runtime"

	"golang.org/x/sys/unix"
)

// givesAway: Linux makes a directory as another user (setfsuid), and so
// gives root's creations to the owner of the directory they are made in.
const givesAway = true

// setfsuid and setfsgid are unix's, returning the id in force before;
// variables so that a test can stand in for a seccomp filter that
// refuses them.
var (
	setfsuid = unix.SetfsuidRetUid
	setfsgid = unix.SetfsgidRetGid
)

// mkdirAsDirOwner makes name in dirfd (mode perm) as dirfd's owner and
// group, when the process runs as root and dirfd is another user's: on a
// thread of its own, which takes their file-system ids for the mkdir
// (root keeps its effective ids) and then ends, never handed back to the
// runtime, so no goroutine ever runs with the owner's ids. tried is false
// where it did not: not root, dirfd root's, the ids refused (a seccomp
// filter), or the owner may not make it there (EACCES: a dir without its
// owner's write bit); the caller then makes it as itself. Otherwise err
// is the mkdir's.
func mkdirAsDirOwner(dirfd int, name string, perm uint32) (tried bool, err error) {
	if unix.Geteuid() != 0 {
		return false, nil
	}
	var dst unix.Stat_t
	if _, err := IgnoringEINTR(func() (struct{}, error) { return struct{}{}, unix.Fstat(dirfd, &dst) }); err != nil || dst.Uid == 0 {
		return false, nil
	}
	type result struct {
		tried bool
		err   error
	}
	done := make(chan result, 1)
	go func() {
		// Locked and never unlocked: the thread ends with this
		// goroutine, its ids with it.
		runtime.LockOSThread()
		setfsgid(int(dst.Gid))
		setfsuid(int(dst.Uid))
		// setfsuid(-1) changes nothing and says the id in force.
		if uid, _ := setfsuid(-1); uid != int(dst.Uid) {
			done <- result{false, nil}
			return
		}
		err := unix.Mkdirat(dirfd, name, perm)
		done <- result{err != unix.EACCES && err != unix.EPERM, err}
	}()
	r := <-done
	if !r.tried {
		return false, nil
	}
	return true, r.err
}

// parentFlags open a job dir's parent for mkdirat: O_PATH needs neither
// its read bit nor its write bit (a write-and-search-only drop box).
const parentFlags = unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC
