package fsat

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// syncRecorder is a Moder that makes the system calls and records the
// identity of every inode it fsyncs; then, when set, runs after its
// chmod.
type syncRecorder struct {
	synced []fileKey
	then   func()
}

type fileKey struct{ dev, ino uint64 }

func keyOf(t *testing.T, path string) fileKey {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		t.Fatal(err)
	}
	return fileKey{uint64(st.Dev), uint64(st.Ino)}
}

func (r *syncRecorder) Chmod(f *os.File, mode uint32) error {
	err := Chmod(f, mode)
	if r.then != nil {
		r.then()
	}
	return err
}

func (r *syncRecorder) SyncFile(f *os.File) error {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return err
	}
	r.synced = append(r.synced, fileKey{uint64(st.Dev), uint64(st.Ino)})
	return f.Sync()
}

// A mode AddOwnerBitsAt or AddOwnerBits gives is fsynced, through the
// Moder, on the inode it was given to (a regular file found again at its
// name, a directory as its own "."; an O_PATH descriptor, which fsync
// refuses, reopened), and only once: a mode already right is neither
// chmodded nor fsynced. Before, the mode was given and never fsynced,
// and check --repair said it mended what a power cut could take back.
func TestAGivenModeIsFsyncedOnItsInode(t *testing.T) {
	d, dir := tempDir(t)
	must(t, os.WriteFile(filepath.Join(dir, "file"), nil, 0o600))
	must(t, os.Chmod(filepath.Join(dir, "file"), 0o200))
	must(t, os.Mkdir(filepath.Join(dir, "sub"), 0o500))
	for _, name := range []string{"file", "sub"} {
		r := &syncRecorder{}
		if _, err := AddOwnerBitsAt(r, d, name, 0o600, -1); err != nil {
			t.Fatal(err)
		}
		if want := keyOf(t, filepath.Join(dir, name)); len(r.synced) != 1 || r.synced[0] != want {
			t.Errorf("%s: fsynced %v; want its inode %v, once", name, r.synced, want)
		}
		r.synced = nil
		if _, err := AddOwnerBitsAt(r, d, name, 0o600, -1); err != nil || r.synced != nil {
			t.Errorf("%s with its bits: %v, fsynced %v; want nothing done", name, err, r.synced)
		}
	}
	must(t, os.Chmod(filepath.Join(dir, "sub"), 0o000))
	up, err := OpenDirUnread(filepath.Join(dir, "sub"))
	if err != nil {
		t.Skipf("a dir of mode 0000 does not open here: %v", err)
	}
	defer up.Close()
	r := &syncRecorder{}
	if _, err := AddOwnerBits(r, up, 0o700); err != nil {
		t.Fatal(err)
	}
	if want := keyOf(t, filepath.Join(dir, "sub")); len(r.synced) != 1 || r.synced[0] != want {
		t.Errorf("the dir open unread: fsynced %v; want its inode %v, once", r.synced, want)
	}
}

// A file swapped at the name between the chmod and the fsync: the fsync
// is of the file given the bits, wherever it is now (reopened by its
// descriptor). Where it cannot be (no /proc), the reopen by name finds
// another file and says so, ErrNotTheOne, and fsyncs nothing: never the
// file swapped in in its place.
func TestTheFsyncIsOfTheFileGivenTheBits(t *testing.T) {
	for _, proc := range []string{procSelfFD, "/nonexistent/proc/self/fd/"} {
		d, dir := tempDir(t)
		path := filepath.Join(dir, "file")
		must(t, os.WriteFile(path, nil, 0o200))
		must(t, os.WriteFile(path+".other", nil, 0o600))
		r := &syncRecorder{then: func() {
			must(t, os.Rename(path, path+".aside"))
			must(t, os.Rename(path+".other", path))
		}}
		procSelfFD = proc
		_, err := AddOwnerBitsAt(r, d, "file", 0o600, -1)
		procSelfFD = "/proc/self/fd/"
		if proc != procSelfFD {
			if !errors.Is(err, ErrNotTheOne) || r.synced != nil {
				t.Errorf("no /proc, swapped after its chmod: %v, fsynced %v; want ErrNotTheOne, nothing fsynced", err, r.synced)
			}
			continue
		}
		if want := keyOf(t, path+".aside"); err != nil || len(r.synced) != 1 || r.synced[0] != want {
			t.Errorf("swapped after its chmod: %v, fsynced %v; want the file given the bits, %v, once", err, r.synced, want)
		}
	}
}
