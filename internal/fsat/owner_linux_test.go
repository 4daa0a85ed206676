package fsat

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// refuseFsids stands in for a seccomp filter that refuses setfsuid and
// setfsgid (the ids in force stay root's).
func refuseFsids(t *testing.T) {
	setfsuid = func(int) (int, error) { return 0, unix.EPERM }
	setfsgid = func(int) (int, error) { return 0, unix.EPERM }
	t.Cleanup(func() { setfsuid, setfsgid = unix.SetfsuidRetUid, unix.SetfsgidRetGid })
}

// countFsids counts the setfsuid calls that change an id into asked.
func countFsids(t *testing.T, asked *int) {
	setfsuid = func(uid int) (int, error) {
		if uid != -1 {
			*asked++
		}
		return unix.SetfsuidRetUid(uid)
	}
	t.Cleanup(func() { setfsuid = unix.SetfsuidRetUid })
}

// refuseChmodPath stands in for a file system that cannot chmod, for the
// chmod through /proc/self/fd too.
func refuseChmodPath(t *testing.T) {
	chmodPath = func(string, uint32) error { return unix.EPERM }
	t.Cleanup(func() { chmodPath = unix.Chmod })
}

// A directory is made as its parent's owner only when both file-system
// ids were taken: with setfsgid refused (a dropped CAP_SETGID) it was
// made the owner's with root's group; now it is made as root.
func TestADirIsMadeAsItsOwnerWithBothIdsOrNot(t *testing.T) {
	needRoot(t)
	d, p := tempDir(t)
	if err := os.Chown(p, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	setfsgid = func(gid int) (int, error) {
		prev, _ := unix.SetfsgidRetGid(-1)
		return prev, unix.EPERM
	}
	t.Cleanup(func() { setfsgid = unix.SetfsgidRetGid })
	if _, err := MkdirNew(d, "half", 0o700); err != nil {
		t.Fatal(err)
	}
	if uid, gid := ownerOf(t, filepath.Join(p, "half")); uid != 0 || gid != 0 {
		t.Errorf("made with the owner's uid and not its gid: %d:%d, want root's, 0:0", uid, gid)
	}
}

// Directories made as their owner by several goroutines at once leave the
// process dumpable too: the flag is the process's, and one goroutine's
// change of ids cleared it while another read it (ownrev3: 13 of 50
// rounds of 8 left it 0).
func TestDirsMadeAsTheirOwnerAtOnceLeaveTheProcessDumpable(t *testing.T) {
	dumpableFirst(t)
	d, p := tempDir(t)
	if err := os.Chown(p, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	const rounds, at = 50, 8
	lost := 0
	for round := range rounds {
		var wg sync.WaitGroup
		for i := range at {
			wg.Go(func() {
				if _, err := MkdirNew(d, fmt.Sprintf("d%d-%d", round, i), 0o700); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		if now, _ := unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0); now != 1 {
			lost++
			unix.Prctl(unix.PR_SET_DUMPABLE, 1, 0, 0, 0) // for the next round, and the tests after
		}
	}
	if uid, _ := ownerOf(t, filepath.Join(p, "d0-0")); uid != nobody {
		t.Fatalf("the dirs are uid %d's: not made as their owner, and this test tests nothing", uid)
	}
	if lost > 0 {
		t.Errorf("%d of %d rounds of %d directories made as their owner at once left the process non-dumpable", lost, rounds, at)
	}
}

// dumpableFirst skips a test of the dumpable flag where it could not
// fail (not root, or fs.suid_dumpable not 0: the kernel keeps the flag),
// and sets the flag first, restoring it after: an earlier test's change
// of ids, under a flaw, leaves it 0, and a test that skipped there let
// the flaw pass in a package run (mutown).
func dumpableFirst(t *testing.T) {
	t.Helper()
	needRoot(t)
	if b, err := os.ReadFile("/proc/sys/fs/suid_dumpable"); err != nil || string(b) != "0\n" {
		t.Skipf("fs.suid_dumpable is %q (%v), not 0: the kernel keeps the flag, and this test could not fail", b, err)
	}
	was, err := unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0)
	if err != nil {
		t.Skipf("the dumpable flag cannot be read here: %v", err)
	}
	t.Cleanup(func() { unix.Prctl(unix.PR_SET_DUMPABLE, uintptr(was), 0, 0, 0) })
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 1, 0, 0, 0); err != nil {
		t.Skipf("the dumpable flag cannot be set here: %v", err)
	}
}
