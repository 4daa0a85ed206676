package db

import (
	"errors"
	"io/fs"
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// A meta.db created in a key dir removed under its writer (a reap that
// took the key while a promotion waited) fails as a missing directory on
// both of createLocked's paths, and through Open: on Linux an unnamed file
// in a removed directory is refused with EPERM, which read "operation not
// permitted", a permission problem an operator would go looking for
// (.ci/long's load run: 4 of 33,321 operations, beside 477 ENOENT).
func TestACreateInARemovedKeyDirSaysItIsGone(t *testing.T) {
	for what, create := range map[string]func(dirfd int, name string) (int, error){
		"createLocked": createLocked, "createThenLock": createThenLock,
	} {
		kd := newKeyDir(t)
		if err := os.Remove(kd.path); err != nil {
			t.Fatal(err)
		}
		fd, err := create(int(kd.dir.Fd()), tempName())
		if err == nil {
			unix.Close(fd)
			t.Fatalf("%s in a removed dir: no error", what)
		}
		if !errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
			t.Errorf("%s in a removed dir = %v; want it to say the directory does not exist", what, err)
		}
	}
	kd := newKeyDir(t)
	if err := os.Remove(kd.path); err != nil {
		t.Fatal(err)
	}
	d, err := OpenWriter(kd.dir, kd.path, Options{})
	if err == nil {
		d.Close()
		t.Fatal("a writer's Open in a removed key dir: no error")
	}
	if !errors.Is(err, fs.ErrNotExist) || strings.Contains(err.Error(), "not permitted") {
		t.Errorf("a writer's Open in a removed key dir = %v; want it to say the directory does not exist", err)
	}
}
