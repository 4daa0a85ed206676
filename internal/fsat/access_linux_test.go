package fsat

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// AccessAt says what the kernel says of an open or a rename, whether it
// has faccessat2 or not (ENOSYS: a kernel before 5.8; EPERM: a seccomp
// filter). x/sys's Faccessat took either answer for no faccessat2 and
// judged the mode bits itself: it let a write to an immutable file,
// which the kernel refuses with EPERM (its own faccessat2 answer, taken
// for a refused call), and refused root the search of a dir with no x
// bit, which root may search; it never saw an ACL or a read-only mount.
func TestAccessAtJudgesAsTheKernelWithOrWithoutFaccessat2(t *testing.T) {
	for _, refusal := range []error{nil, unix.ENOSYS, unix.EPERM} {
		t.Run(fmt.Sprintf("faccessat2 refused with %v", refusal), func(t *testing.T) {
			if refusal != nil {
				faccessat2 = func(int, string, uint32, int) error { return refusal }
				defer func() { faccessat2 = unix.Faccessat2 }()
			}
			d, p := tempDir(t)
			must(t, os.Symlink("missing", filepath.Join(p, "link")))
			if err := AccessAt(d, "link", unix.W_OK); err != nil {
				t.Errorf("a link to nothing: %v; want it judged itself", err)
			}
			if err := AccessAt(d, "missing", unix.W_OK); !IsNotExist(err) {
				t.Errorf("a missing name: %v; want ENOENT", err)
			}
			write(t, filepath.Join(p, "readonly"), "x")
			must(t, os.Chmod(filepath.Join(p, "readonly"), 0o400))
			f, openErr := os.OpenFile(filepath.Join(p, "readonly"), os.O_WRONLY, 0)
			if openErr == nil {
				f.Close() // root's
			}
			if err := AccessAt(d, "readonly", unix.W_OK); (err == nil) != (openErr == nil) || err != nil && !errors.Is(err, unix.EACCES) {
				t.Errorf("a file 0400, to write: %v; want what its open says, %v", err, openErr)
			}
			if os.Geteuid() != 0 {
				return
			}
			must(t, os.Mkdir(filepath.Join(p, "noexec"), 0o600))
			if err := AccessAt(d, "noexec", unix.W_OK|unix.X_OK); err != nil {
				t.Errorf("a dir 0600, to root: %v; want nil (root searches any dir)", err)
			}
			write(t, filepath.Join(p, "immutable"), "x")
			if !setImmutable(t, filepath.Join(p, "immutable"), true) {
				return
			}
			defer setImmutable(t, filepath.Join(p, "immutable"), false)
			if _, err := os.OpenFile(filepath.Join(p, "immutable"), os.O_WRONLY, 0); !errors.Is(err, unix.EPERM) {
				t.Fatalf("open of an immutable file to write: %v; want EPERM", err)
			}
			if err := AccessAt(d, "immutable", unix.W_OK); !errors.Is(err, unix.EPERM) {
				t.Errorf("an immutable file, to write: %v; want EPERM, as its open", err)
			}
		})
	}
}

// fsImmutableFL is linux/fs.h's FS_IMMUTABLE_FL, which x/sys lacks.
const fsImmutableFL = 0x10

// setImmutable sets or clears path's immutable flag (chattr +i), false
// where its file system or this process cannot.
func setImmutable(t *testing.T, path string, on bool) bool {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	flags, err := unix.IoctlGetInt(int(f.Fd()), unix.FS_IOC_GETFLAGS)
	if err != nil {
		t.Logf("no flags here (%v): the immutable case is not run", err)
		return false
	}
	if on {
		flags |= fsImmutableFL
	} else {
		flags &^= fsImmutableFL
	}
	if err := unix.IoctlSetPointerInt(int(f.Fd()), unix.FS_IOC_SETFLAGS, flags); err != nil {
		if on {
			t.Logf("chattr +i refused (%v): the immutable case is not run", err)
			return false
		}
		t.Errorf("chattr -i %s: %v", path, err)
	}
	return true
}
