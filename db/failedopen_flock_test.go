package db

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"sessdb/internal/testfs"
)

// An open that had meta.db's flock and then found the file damaged lets
// go of the flock though a child forked meanwhile holds a copy of its
// descriptor: the next opener of the key is not kept waiting until the
// child execs. The copy is made by hand where a fork's would be, once
// the flock is had.
func TestAFailedOpenLetsGoOfItsFlockThoughACopyOfItsDescriptorLives(t *testing.T) {
	for _, write := range []bool{false, true} {
		kd := newKeyDir(t)
		path := filepath.Join(kd.path, FileName)
		if err := os.WriteFile(path, bytes.Repeat([]byte("garbage "), 1024), 0o600); err != nil {
			t.Fatal(err)
		}
		testHookLocked = func() {
			copied, ok, err := testfs.DupDescriptorOf(path)
			if !ok {
				t.Skip("no /proc/self/fd to find the open's descriptor in")
			}
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { unix.Close(copied) })
		}
		open := OpenReader
		if write {
			open = OpenWriter
		}
		d, err := open(kd.dir, kd.path, Options{})
		testHookLocked = nil
		if d != nil || !errors.Is(err, ErrDamaged) {
			t.Fatalf("write %v: open of garbage = %v, %v; want ErrDamaged", write, d != nil, err)
		}
		other, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := unix.Flock(int(other.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
			t.Errorf("write %v: another open's flock after the failed open: %v; want it had", write, err)
		}
		other.Close()
	}
}
