package db

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The descriptor holdTurnstile takes the key dir's turnstile on is
// close-on-exec from the call that makes it: a child a Go worker forks
// and execs while an open holds the turnstile (a job's container started
// meanwhile) must not keep the key dir open past its exec.
func TestTheTurnstilesDescriptorIsCloseOnExec(t *testing.T) {
	kd := newKeyDir(t)
	var before unix.Stat_t
	if err := unix.Fstat(int(kd.dir.Fd()), &before); err != nil {
		t.Fatal(err)
	}
	own := map[int]bool{}
	for _, fd := range descriptorsOf(t, before) {
		own[fd] = true
	}
	release, err := holdTurnstile(context.Background(), int(kd.dir.Fd()), time.Now().Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	held := 0
	for _, fd := range descriptorsOf(t, before) {
		if own[fd] {
			continue
		}
		held++
		if flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err != nil || flags&unix.FD_CLOEXEC == 0 {
			t.Errorf("the turnstile's descriptor %d: flags %#x, %v; want FD_CLOEXEC", fd, flags, err)
		}
	}
	if held != 1 {
		t.Errorf("%d new descriptors of the key dir while the turnstile is held; want 1", held)
	}
}

// descriptorsOf lists the process's descriptors of the file st (through
// /proc/self/fd); the test is skipped where there is none.
func descriptorsOf(t *testing.T, st unix.Stat_t) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	var fds []int
	for _, e := range entries {
		fd, err := strconv.Atoi(e.Name())
		var s unix.Stat_t
		if err != nil || unix.Stat(filepath.Join("/proc/self/fd", e.Name()), &s) != nil || s.Dev != st.Dev || s.Ino != st.Ino {
			continue
		}
		fds = append(fds, fd)
	}
	return fds
}
