package db

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// A key dir whose descriptor cannot be flocked (EBADF: a directory on a
// filesystem without flock on directories; here an O_PATH descriptor,
// which flock refuses the same way) is no turnstile: meta.db's flock is
// taken alone, and the open works as before the turnstile.
func TestUnflockableKeyDirTakesMetaDBsLockAlone(t *testing.T) {
	dir := t.TempDir()
	// meta.db made through an ordinary descriptor: its creation fsyncs
	// the dir, which an O_PATH descriptor cannot.
	plain, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	made, err := OpenWriter(plain, filepath.Join(dir, FileName), Options{})
	if err != nil {
		t.Fatal(err)
	}
	made.Close()
	plain.Close()
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	kd := os.NewFile(uintptr(fd), dir)
	defer kd.Close()
	if err := unix.Flock(fd, unix.LOCK_SH|unix.LOCK_NB); err != unix.EBADF {
		t.Fatalf("flock of an O_PATH descriptor: %v, want EBADF (the case this test stands in for)", err)
	}
	name := filepath.Join(dir, FileName)
	w, err := OpenWriter(kd, name, Options{})
	if err != nil {
		t.Fatalf("a writer in a key dir that cannot be flocked: %v", err)
	}
	w.Close()
	r, err := OpenReader(kd, name, Options{})
	if err != nil {
		t.Fatalf("a reader in a key dir that cannot be flocked: %v", err)
	}
	r.Close()
}
