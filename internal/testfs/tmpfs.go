package testfs

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// TmpfsDir is a new directory on /dev/shm, the tmpfs Linux mounts, removed
// when t ends; t is skipped where there is none. tmpfs keeps any mtime it
// is given, where ext4 (a test's usual temp dir) clamps one to 1901..2446:
// only there can a test date a file at either end of 64 bits.
func TmpfsDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("/dev/shm", "sessdb-")
	if err != nil {
		t.Skipf("no tmpfs at /dev/shm here: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// Date sets path's access and modification times to sec seconds since
// 1970, and skips t where the file system keeps another time (it clamps)
// or the platform's time_t cannot hold it (32 bits, as on linux/arm).
func Date(t testing.TB, path string, sec int64) {
	t.Helper()
	ts := Seconds(t, sec)
	if err := unix.UtimesNano(path, []unix.Timespec{ts, ts}); err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil || int64(st.Mtim.Sec) != sec {
		t.Skipf("this file system keeps %s's mtime as %d s, not %d (%v)", path, st.Mtim.Sec, sec, err)
	}
}

// Seconds is the Timespec of sec seconds since 1970. It skips t where the
// platform's time_t cannot hold sec (32 bits, as on linux/arm).
func Seconds(t testing.TB, sec int64) unix.Timespec {
	t.Helper()
	var ts unix.Timespec
	if !SetTimeField(&ts.Sec, sec) {
		t.Skipf("this platform's time_t cannot hold %d s", sec)
	}
	return ts
}

// SetTimeField sets *field, a Timespec's Sec or Nsec (int64, or int32
// where time_t has 32 bits), to v, and reports whether it holds v.
func SetTimeField[T int32 | int64](field *T, v int64) bool {
	*field = T(v)
	return int64(*field) == v
}
