package db

import (
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// syncedDirs records the key dir's fsyncs while f runs: those made on a
// descriptor of the key dir itself.
func syncedDirs(t *testing.T, kd keyDir, f func()) int {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Fstat(int(kd.dir.Fd()), &st); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	n := 0
	testHookSynced = func(fd int) {
		var fst unix.Stat_t
		if unix.Fstat(fd, &fst) == nil && fst.Dev == st.Dev && fst.Ino == st.Ino {
			mu.Lock()
			n++
			mu.Unlock()
		}
	}
	defer func() { testHookSynced = nil }()
	f()
	mu.Lock()
	defer mu.Unlock()
	return n
}

// A new meta.db's link, and the rename of a hard-linked meta.db's copy
// over it, are made durable (the key dir fsynced) before the open returns:
// a writer's first commit is acknowledged on a name a power cut could
// otherwise take back.
func TestANewOrCopiedMetaDBsNameIsMadeDurable(t *testing.T) {
	kd := newKeyDir(t)
	if n := syncedDirs(t, kd, func() { mustOpen(t, kd, true).Close() }); n == 0 {
		t.Error("the key dir was not fsynced after meta.db was created")
	}
	hardLink(t, kd)
	if n := syncedDirs(t, kd, func() { mustOpen(t, kd, true).Close() }); n == 0 {
		t.Error("the key dir was not fsynced after a hard-linked meta.db's copy was renamed over it")
	}
}
