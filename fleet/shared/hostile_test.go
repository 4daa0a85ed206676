package shared

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
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

// Something other than a directory at a key's name (a link to a
// directory, a regular file) is ErrNotRegular to every caller, which
// judges the key by it, and its text says what is wanted there, a
// directory: "not a regular file" sent an operator looking for a file
// that was not wanted. Write, Open and KeyDirErr say it alike.
func TestAKeyNameTakenByANonDirectoryIsNamedForTheDirectoryWanted(t *testing.T) {
	elsewhere := t.TempDir()
	for what, make := range map[string]func(p string) error{
		"a link to a directory": func(p string) error { return os.Symlink(elsewhere, p) },
		"a regular file":        func(p string) error { return os.WriteFile(p, nil, 0o600) },
	} {
		dir := t.TempDir()
		if err := make(filepath.Join(dir, key)); err != nil {
			t.Fatal(err)
		}
		_, _, _, werr := Write(t.Context(), dir, key, 1, strings.NewReader("{}\n"))
		_, oerr := Open(dir, key+"/0000000000000001-0123456789abcdef.jsonl")
		kerr := KeyDirErr(dir, key)
		for op, err := range map[string]error{"Write": werr, "Open": oerr, "KeyDirErr": kerr} {
			if !errors.Is(err, ErrNotRegular) || !strings.Contains(fmt.Sprint(err), "not a directory") || strings.Contains(fmt.Sprint(err), "not a regular file") {
				t.Errorf("%s at the key's name: %s = %v; want ErrNotRegular, saying not a directory", what, op, err)
			}
		}
	}
	if names, err := os.ReadDir(elsewhere); err != nil || len(names) != 0 {
		t.Errorf("the directory the link names holds %v (%v); want nothing written through the link", names, err)
	}
}
