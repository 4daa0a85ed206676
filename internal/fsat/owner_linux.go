package fsat

import (
	"runtime"
	"sync"

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
// group, when the process runs as root and dirfd is another user's, and
// returns the uid that made it. It runs on a goroutine of its own, locked
// to its thread, which takes their file-system ids for the mkdir (root
// keeps its effective ids) and takes root's back after it: the thread is
// handed back to the runtime only when both are root's again (else it
// ends with the goroutine, or, where it is the process's main thread,
// which the runtime cannot end, is parked for good: no goroutine runs on
// it again, but /proc/PID/status, which shows that thread, then shows
// the owner's fsuid), and the process is made dumpable again where the
// change of ids took that (the kernel does, under suid_dumpable 0).
// tried is false where it did not make it: not root, dirfd root's, either
// id refused (a seccomp filter, a dropped capability), or the owner may
// not make it there (EACCES: a dir without its owner's write bit); the
// caller then makes it as itself. Otherwise err is the mkdir's.
func mkdirAsDirOwner(dirfd int, name string, perm uint32) (uid int, tried bool, err error) {
	if unix.Geteuid() != 0 {
		return 0, false, nil
	}
	var dst unix.Stat_t
	if _, err := IgnoringEINTR(func() (struct{}, error) { return struct{}{}, unix.Fstat(dirfd, &dst) }); err != nil || dst.Uid == 0 {
		return 0, false, nil
	}
	type result struct {
		tried bool
		err   error
	}
	done := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		holdDumpable()
		prevGID, _ := setfsgid(int(dst.Gid))
		prevUID, _ := setfsuid(int(dst.Uid))
		var r result
		if fsidsAre(int(dst.Uid), int(dst.Gid)) {
			err := unix.Mkdirat(dirfd, name, perm)
			r = result{err != unix.EACCES && err != unix.EPERM, err}
		}
		setfsuid(prevUID)
		setfsgid(prevGID)
		releaseDumpable()
		if fsidsAre(prevUID, prevGID) {
			runtime.UnlockOSThread()
		}
		done <- r
	}()
	r := <-done
	return int(dst.Uid), r.tried, r.err
}

// dumpable is the process's dumpable flag (PR_GET_DUMPABLE) as it was
// before the first of the changes of ids in flight, and how many are. The
// flag is the process's, and the kernel clears it at each change of any
// thread's file-system ids (under suid_dumpable 0): a goroutine that read
// it while another's change was in flight took that change's 0 for the
// process's own, and set back nothing (13 of 50 rounds of 8 at once left
// the process non-dumpable, ownrev3). So the first change in reads it,
// and the last one out, its ids set back, sets it back.
var dumpable struct {
	sync.Mutex
	inFlight int
	was      int
}

// holdDumpable counts a change of ids in, before it is made.
func holdDumpable() {
	dumpable.Lock()
	defer dumpable.Unlock()
	if dumpable.inFlight == 0 {
		dumpable.was, _ = unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0)
	}
	dumpable.inFlight++
}

// releaseDumpable counts a change of ids out, once its ids are set back,
// and the last one out sets the flag back.
func releaseDumpable() {
	dumpable.Lock()
	defer dumpable.Unlock()
	dumpable.inFlight--
	if dumpable.inFlight > 0 {
		return
	}
	if now, _ := unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0); now != dumpable.was {
		unix.Prctl(unix.PR_SET_DUMPABLE, uintptr(dumpable.was), 0, 0, 0)
	}
}

// fsidsAre reports whether the thread's file-system ids are uid and gid
// (setfsuid(-1) and setfsgid(-1), ids no one has, change nothing and
// return the ones in force).
func fsidsAre(uid, gid int) bool {
	u, _ := setfsuid(-1)
	g, _ := setfsgid(-1)
	return u == uid && g == gid
}

// unreadDirFlags open a directory for names in it and for its own mode,
// not to list it (a job dir's parent for mkdirat, OpenDirUnread): O_PATH
// needs neither its read bit nor its write bit (a write-and-search-only
// drop box; a root whose owner's bits were taken), so such a directory
// opens (dirOpensUnread).
const (
	unreadDirFlags = unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC
	dirOpensUnread = true
)
