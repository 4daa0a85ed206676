package db

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"sessdb/internal/testfs"
)

// A device node at meta.db is refused unopened, by a reader and by a
// writer: the open of a device runs its driver (a tape rewinds, a
// terminal could become the controlling one). inotify sees every open of
// the node; the driver here is /dev/null's, whose open is harmless.
func TestDeviceAtMetaDBIsNeverOpened(t *testing.T) {
	dir := t.TempDir()
	node := filepath.Join(dir, FileName)
	opens, stop, err := testfs.WatchedNullDevice(node)
	if err != nil {
		t.Skipf("no device node whose opens can be watched here: %v", err)
	}
	defer stop()
	kd, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer kd.Close()
	for _, write := range []bool{false, true} {
		open := OpenReader
		if write {
			open = OpenWriter
		}
		d, err := open(kd, FileName, Options{})
		if err == nil {
			d.Close()
		}
		if !errors.Is(err, ErrDamaged) {
			t.Errorf("open (write %v) of a device at meta.db = %v, want ErrDamaged", write, err)
		}
		if n := opens(); n != 0 {
			t.Errorf("open (write %v) opened the device %d times", write, n)
		}
	}
}
