//go:build linux

package fsat

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// Made by root in a directory another user owns, every kind of creation
// takes that directory's uid as its uid and its gid as its gid, each in
// its place: a dir whose gid is not its uid (nobody's, in group 54322),
// and one whose group is root's (a container's worker, uid 65534 with
// gid 0), where the file root creates already has the dir's gid and
// still needs its uid. OpenRaw's fstat says who the file is now.
func TestWhatRootCreatesTakesTheDirsUIDAndGIDEachInItsPlace(t *testing.T) {
	needRoot(t)
	for _, o := range []struct{ uid, gid uint32 }{{nobody, 54322}, {nobody, 0}} {
		d, p := tempDir(t)
		if err := os.Chown(p, int(o.uid), int(o.gid)); err != nil {
			t.Fatal(err)
		}
		if _, err := MkdirNew(d, "at", 0o700); err != nil {
			t.Fatal(err)
		}
		if _, err := Mkdir(filepath.Join(p, "path"), 0o700); err != nil {
			t.Fatal(err)
		}
		fd, st, err := OpenRaw(d, "file", unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		unix.Close(fd)
		if st.Uid != o.uid || st.Gid != o.gid {
			t.Errorf("dir %d:%d: OpenRaw's fstat says the file is %d:%d; want %d:%d, as the chown left it", o.uid, o.gid, st.Uid, st.Gid, o.uid, o.gid)
		}
		raw, err := unix.Openat(int(d.Fd()), "raw", unix.O_RDWR|unix.O_CREAT|unix.O_EXCL, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		err = Created(int(d.Fd()), raw, 0o600, "raw")
		unix.Close(raw)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"at", "path", "file", "raw"} {
			if uid, gid := ownerOf(t, filepath.Join(p, name)); uid != o.uid || gid != o.gid {
				t.Errorf("dir %d:%d: %s is %d:%d; want the dir's, %d:%d", o.uid, o.gid, name, uid, gid, o.uid, o.gid)
			}
		}
	}
}

// A directory made as its parent's owner, under a umask that takes the
// owner's bits, is given them: the bits go to the directory made, which
// is that owner's (its maker's, not root's, and not its group's), so
// it is made and not ErrReplaced, mode 0700, theirs.
func TestADirMadeAsItsOwnerGetsItsBitsWhateverTheUmask(t *testing.T) {
	needRoot(t)
	d, p := tempDir(t)
	if err := os.Chown(p, nobody, 54322); err != nil {
		t.Fatal(err)
	}
	withUmask(t, 0o777, func() {
		if made, err := MkdirNew(d, "at", 0o700); !made || err != nil {
			t.Errorf("MkdirNew as the dir's owner under umask 0777: made %v, %v; want made", made, err)
		}
		if made, err := Mkdir(filepath.Join(p, "path"), 0o700); !made || err != nil {
			t.Errorf("Mkdir as the dir's owner under umask 0777: made %v, %v; want made", made, err)
		}
	})
	for _, name := range []string{"at", "path"} {
		var st unix.Stat_t
		if err := unix.Lstat(filepath.Join(p, name), &st); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if st.Uid != nobody || st.Gid != 54322 || st.Mode&0o7777 != 0o700 {
			t.Errorf("%s: %d:%d mode %04o; want %d:54322, 0700", name, st.Uid, st.Gid, st.Mode&0o7777, nobody)
		}
	}
}

// A thread whose file-system uid could not be set back to root's after a
// directory was made as its parent's owner is never handed back to the
// runtime: no goroutine runs on it, with the owner's uid, again (it ends
// with its goroutine, or, the main thread, is parked by the runtime). The
// setfsuid here refuses root's back, as a seccomp filter could. The goroutine the mkdir wakes, and goroutines
// started after it, are where a thread handed back would run next.
func TestAThreadWhoseIdsCannotBeSetBackRunsNothingAgain(t *testing.T) {
	needRoot(t)
	d, p := tempDir(t)
	if err := os.Chown(p, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	setfsuid = func(uid int) (int, error) {
		if uid == 0 {
			prev, _ := unix.SetfsuidRetUid(-1)
			return prev, unix.EPERM
		}
		return unix.SetfsuidRetUid(uid)
	}
	t.Cleanup(func() { setfsuid = unix.SetfsuidRetUid })
	// where says what is wrong with the thread it runs on, "" if nothing.
	where := func() string {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if fsuid, _ := unix.SetfsuidRetUid(-1); fsuid != 0 {
			return fmt.Sprintf("thread %d runs a goroutine with the owner's fsuid, %d", unix.Gettid(), fsuid)
		}
		return ""
	}
	for i := range 20 {
		name := fmt.Sprint("d", i)
		if _, err := MkdirNew(d, name, 0o700); err != nil {
			t.Fatalf("mkdir %d: %v; want it made (a thread left with the owner's ids runs the test's goroutine?)", i, err)
		}
		if bad := where(); bad != "" {
			t.Fatalf("after mkdir %d: %s; want it never handed back", i, bad)
		}
		if uid, _ := ownerOf(t, filepath.Join(p, name)); uid != nobody {
			t.Fatalf("%s is uid %d's: not made as its owner, and this test tests nothing", name, uid)
		}
		var wg sync.WaitGroup
		bad := make([]string, 8)
		for j := range bad {
			wg.Go(func() { bad[j] = where() })
		}
		wg.Wait()
		for _, b := range bad {
			if b != "" {
				t.Fatalf("after mkdir %d: %s; want it never handed back", i, b)
			}
		}
	}
}

// A thread whose ids were set back is handed back to the runtime, not
// ended: a hundred directories made as their parent's owner, one after
// another, take their owner's ids on a few threads, reused, where ending
// each thread takes a new one (a new thread id) for every mkdir.
func TestADirMadeAsItsOwnerHandsItsThreadBack(t *testing.T) {
	needRoot(t)
	d, p := tempDir(t)
	if err := os.Chown(p, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	threads := map[int]bool{} // the threads that took the owner's uid
	setfsuid = func(uid int) (int, error) {
		if uid == nobody {
			mu.Lock()
			threads[unix.Gettid()] = true
			mu.Unlock()
		}
		return unix.SetfsuidRetUid(uid)
	}
	t.Cleanup(func() { setfsuid = unix.SetfsuidRetUid })
	for i := range 100 {
		if _, err := MkdirNew(d, fmt.Sprint("d", i), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if uid, _ := ownerOf(t, filepath.Join(p, "d0")); uid != nobody {
		t.Fatalf("d0 is uid %d's: not made as its owner, and this test tests nothing", uid)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(threads) >= 50 {
		t.Errorf("100 dirs made as their owner took the owner's ids on %d threads; want a few, each handed back and reused", len(threads))
	}
}

// The bits a mkdir gives go to the directory it made: a regular file of
// the maker's own, lacking its owner's bits, swapped in at the name
// before the chmod is left as it is (ErrReplaced), not given them.
func TestAMkdirGivesNoBitsToAFileSwappedIn(t *testing.T) {
	d, p := tempDir(t)
	testHookAfterMkdir = func(name string) {
		os.Rename(filepath.Join(p, name), filepath.Join(p, "made"))
		fd, err := unix.Open(filepath.Join(p, name), unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL, 0)
		if err == nil {
			unix.Close(fd)
		}
	}
	defer func() { testHookAfterMkdir = nil }()
	withUmask(t, 0o777, func() {
		if made, err := MkdirNew(d, "key", 0o700); made || !errors.Is(err, ErrReplaced) {
			t.Errorf("a file swapped in for the dir made: made %v, %v; want ErrReplaced", made, err)
		}
	})
	if got := permOf(t, filepath.Join(p, "key")); got != 0 {
		t.Errorf("the file swapped in is mode %04o; want 0000 as it was", got)
	}
}

// Root making a directory as itself (in its own dir) gives the bits to
// its own: another user's directory swapped in at the name before the
// chmod, lacking its owner's bits, is left as it is (ErrReplaced).
func TestADirRootMadeAsItselfGivesNoBitsToAnotherUsersDir(t *testing.T) {
	needRoot(t)
	d, p := tempDir(t)
	theirs := filepath.Join(p, "theirs")
	must(t, os.Mkdir(theirs, 0o700))
	must(t, os.Chown(theirs, nobody, nobody))
	must(t, os.Chmod(theirs, 0))
	testHookAfterMkdir = func(name string) {
		os.Rename(filepath.Join(p, name), filepath.Join(p, "made"))
		os.Rename(theirs, filepath.Join(p, name))
	}
	defer func() { testHookAfterMkdir = nil }()
	withUmask(t, 0o777, func() {
		if made, err := MkdirNew(d, "key", 0o700); made || !errors.Is(err, ErrReplaced) {
			t.Errorf("another user's dir swapped in for root's: made %v, %v; want ErrReplaced", made, err)
		}
	})
	var st unix.Stat_t
	must(t, unix.Lstat(filepath.Join(p, "key"), &st))
	if st.Uid != nobody || st.Mode&0o7777 != 0 {
		t.Errorf("the dir swapped in is uid %d's, mode %04o; want uid %d's, 0000 as it was", st.Uid, st.Mode&0o7777, nobody)
	}
}

// The process's dumpable flag, which the kernel takes when a thread's
// file-system uid changes (under fs.suid_dumpable 0), is set back after
// a directory made as its owner, whatever the tests before did with it:
// it is set here first, so that the test runs where an earlier test has
// left it cleared (a skip there let a flaw pass in a package run).
func TestADirMadeAsItsOwnerSetsTheDumpableFlagBack(t *testing.T) {
	dumpableFirst(t)
	d, p := tempDir(t)
	if err := os.Chown(p, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		name := fmt.Sprint("made", i)
		if _, err := MkdirNew(d, name, 0o700); err != nil {
			t.Fatal(err)
		}
		if uid, _ := ownerOf(t, filepath.Join(p, name)); uid != nobody {
			t.Fatalf("%s is uid %d's: not made as its owner, and this test tests nothing", name, uid)
		}
		if after, err := unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0); err != nil || after != 1 {
			t.Fatalf("dumpable %d after directory %d made as its owner, %v; want 1, as it was", after, i, err)
		}
	}
}
