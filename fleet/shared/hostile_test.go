package shared

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"sessdb/internal/testfs"
)

// A socket or a device at a generation's name is ErrNotRegular, which a
// resolve reads as a named miss, and a device is never opened: its open
// runs its driver.
func TestOpenRefusesASocketAndNeverOpensADevice(t *testing.T) {
	dir := t.TempDir()
	name := key + "/0000000000000001-0123456789abcdef.jsonl"
	if err := os.Mkdir(filepath.Join(dir, key), 0o700); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	testfs.Socket(t, p)
	if f, err := Open(dir, name); !errors.Is(err, ErrNotRegular) {
		if err == nil {
			f.Close()
		}
		t.Errorf("Open of a socket = %v, want ErrNotRegular", err)
	}
	os.Remove(p)

	opens, stop, err := testfs.WatchedNullDevice(p)
	if err != nil {
		t.Skipf("no device node whose opens can be watched here: %v", err)
	}
	defer stop()
	if f, err := Open(dir, name); !errors.Is(err, ErrNotRegular) {
		if err == nil {
			f.Close()
		}
		t.Errorf("Open of a device = %v, want ErrNotRegular", err)
	}
	if n := opens(); n != 0 {
		t.Errorf("Open opened the device %d times", n)
	}
}
