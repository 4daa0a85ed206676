package fsat

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// withUmask runs f under the process's umask mask. The umask is the
// process's, so no test of this package runs beside this one (none calls
// t.Parallel).
func withUmask(t *testing.T, mask int, f func()) {
	t.Helper()
	old := syscall.Umask(mask)
	defer syscall.Umask(old)
	f()
}

func permOf(t *testing.T, p string) uint32 {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	return uint32(fi.Mode().Perm())
}

// What this package creates has the owner's bits of the mode asked for,
// whatever the umask takes: a directory (MkdirNew, Mkdir), a file created
// afresh (OpenAt with O_CREAT|O_EXCL), and a file created elsewhere and
// handed over (Created). The umask keeps its say over the
// group's and the others' bits. Where the kernel has no fchmodat2 (a
// stand-in answers EOPNOTSUPP, as x/sys says on Linux before 6.6), or a
// seccomp filter refuses it (EPERM: with it, root was refused a chmod it
// could do), a directory is opened and fchmodded instead: that needs the owner's read
// bit, or root, and a directory that cannot be given its bits is removed
// again, the error saying chmod.
func TestCreationsKeepTheOwnersBitsWhateverTheUmask(t *testing.T) {
	for _, refusal := range []error{nil, unix.EOPNOTSUPP, unix.EPERM} {
		oldKernel := refusal != nil
		for _, mask := range []int{0o022, 0o077, 0o177, 0o277, 0o477, 0o777} {
			t.Run(fmt.Sprintf("umask %03o, fchmodat2 refused with %v", mask, refusal), func(t *testing.T) {
				if oldKernel {
					fchmodat = func(int, string, uint32, int) error { return refusal }
					defer func() { fchmodat = unix.Fchmodat }()
				}
				d, p := tempDir(t)
				dirWant := uint32(0o755&^mask | 0o700)
				fileWant := uint32(0o644&^mask | 0o600)
				// Without O_PATH (not Linux) only root opens a directory
				// its owner may not read; on Linux, without fchmodat2, the
				// chmod goes through /proc/self/fd.
				dirFails := mask&0o400 != 0 && os.Geteuid() != 0 && runtime.GOOS != "linux"
				withUmask(t, mask, func() {
					for name, mkdir := range map[string]func() (bool, error){
						"at":   func() (bool, error) { return MkdirNew(d, "at", 0o755) },
						"path": func() (bool, error) { return Mkdir(filepath.Join(p, "path"), 0o755) },
					} {
						made, err := mkdir()
						switch {
						case dirFails:
							var pe *os.PathError
							if made || !errors.As(err, &pe) || pe.Op != "open" || !errors.Is(err, unix.EACCES) {
								t.Errorf("%s: made %v, %v; want an open error, EACCES", name, made, err)
							}
							if _, serr := os.Lstat(filepath.Join(p, name)); !os.IsNotExist(serr) {
								t.Errorf("%s: the dir that could not be given its bits is still there (%v)", name, serr)
							}
						case err != nil || !made:
							t.Errorf("%s: made %v, %v", name, made, err)
						default:
							if got := permOf(t, filepath.Join(p, name)); got != dirWant {
								t.Errorf("%s: mode %03o, want %03o", name, got, dirWant)
							}
						}
					}
					f, err := OpenAt(d, "file", unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL, 0o644)
					if err != nil {
						t.Fatal(err)
					}
					st, _ := Fstat(f)
					f.Close()
					if got := permOf(t, filepath.Join(p, "file")); got != fileWant || uint32(st.Mode)&0o777 != fileWant {
						t.Errorf("OpenAt: mode %03o (OpenRaw's fstat says %03o), want %03o", got, uint32(st.Mode)&0o777, fileWant)
					}
					fd, err := unix.Openat(int(d.Fd()), "raw", unix.O_RDWR|unix.O_CREAT|unix.O_EXCL, 0o600)
					if err != nil {
						t.Fatal(err)
					}
					err = Created(int(d.Fd()), fd, 0o600, "raw")
					unix.Close(fd)
					if got := permOf(t, filepath.Join(p, "raw")); err != nil || got != 0o600 {
						t.Errorf("Created: mode %03o, %v; want 600", got, err)
					}
				})
			})
		}
	}
}

// Only what the call itself created is given bits: a directory already at
// the name, and a file opened with O_CREAT but not O_EXCL, keep the mode
// they have. And a file system that cannot chmod fails a creation the
// umask took bits from, leaving nothing at the name; under a umask that
// takes none it is never asked to.
func TestOnlyACreationIsGivenBits(t *testing.T) {
	d, p := tempDir(t)
	must(t, os.Mkdir(filepath.Join(p, "dir"), 0o500))
	write(t, filepath.Join(p, "file"), "x")
	must(t, os.Chmod(filepath.Join(p, "file"), 0o400))
	withUmask(t, 0o777, func() {
		if made, err := MkdirNew(d, "dir", 0o700); made || err != nil {
			t.Errorf("MkdirNew of an existing dir: made %v, %v", made, err)
		}
		fd, _, err := OpenRaw(d, "file", unix.O_RDONLY|unix.O_CREAT, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		unix.Close(fd)
	})
	if got := permOf(t, filepath.Join(p, "dir")); got != 0o500 {
		t.Errorf("existing dir: mode %03o, want 500", got)
	}
	if got := permOf(t, filepath.Join(p, "file")); got != 0o400 {
		t.Errorf("existing file: mode %03o, want 400", got)
	}

	refuse := func(int, uint32) error { return unix.EPERM }
	fchmod = refuse
	fchmodat = func(int, string, uint32, int) error { return unix.EPERM }
	defer func() { fchmod, fchmodat = unix.Fchmod, unix.Fchmodat }()
	refuseChmodPath(t)
	withUmask(t, 0o022, func() {
		f, err := OpenAt(d, "usual", unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL, 0o600)
		if err != nil {
			t.Fatalf("under umask 022 a creation asked for a chmod: %v", err)
		}
		f.Close()
		if made, err := MkdirNew(d, "usualdir", 0o700); !made || err != nil {
			t.Fatalf("under umask 022 a mkdir asked for a chmod: %v, %v", made, err)
		}
	})
	withUmask(t, 0o377, func() {
		_, err := OpenAt(d, "taken", unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL, 0o600)
		var pe *os.PathError
		if !errors.As(err, &pe) || pe.Op != "chmod" || !errors.Is(err, unix.EPERM) {
			t.Errorf("file: %v; want a chmod error, EPERM", err)
		}
		if made, err := MkdirNew(d, "takendir", 0o700); made || !errors.As(err, &pe) || pe.Op != "chmod" {
			t.Errorf("dir: made %v, %v; want a chmod error", made, err)
		}
	})
	for _, name := range []string{"taken", "takendir"} {
		if _, err := os.Lstat(filepath.Join(p, name)); !os.IsNotExist(err) {
			t.Errorf("%s: left at its name (%v)", name, err)
		}
	}
}

// AddOwnerBitsAt adds the owner's bits a directory or a regular file
// lacks, and reports the mode it found; it never follows a link (the
// link's target keeps its mode) and leaves a FIFO, or another user's
// entry, alone (ErrNotTheOne); bits beyond the owner's are not given.
// With and without fchmodat2.
func TestAddOwnerBitsAt(t *testing.T) {
	for _, oldKernel := range []bool{false, true} {
		if oldKernel {
			fchmodat = func(int, string, uint32, int) error { return unix.EOPNOTSUPP }
		}
		d, p := tempDir(t)
		must(t, os.Mkdir(filepath.Join(p, "dir"), 0o700))
		must(t, os.Chmod(filepath.Join(p, "dir"), 0o550))
		write(t, filepath.Join(p, "file"), "x")
		must(t, os.Chmod(filepath.Join(p, "file"), 0o444))
		write(t, filepath.Join(p, "target"), "x")
		must(t, os.Chmod(filepath.Join(p, "target"), 0o400))
		must(t, os.Symlink("target", filepath.Join(p, "link")))
		must(t, unix.Mkfifo(filepath.Join(p, "fifo"), 0o400))
		write(t, filepath.Join(p, "others"), "x")
		must(t, os.Chmod(filepath.Join(p, "others"), 0o400))
		me := os.Geteuid()
		for _, c := range []struct {
			name         string
			bits         uint32
			uid          int
			before, want uint32
			at           string // where the mode is looked at
			refused      bool   // ErrNotTheOne
		}{
			{"dir", 0o777, me, 0o550, 0o750, "dir", false},
			{"file", 0o600, -1, 0o444, 0o644, "file", false},
			{"link", 0o600, -1, 0, 0o400, "target", true},
			{"fifo", 0o600, -1, 0, 0o400, "fifo", true},
			{"others", 0o600, me + 1, 0, 0o400, "others", true},
		} {
			before, err := AddOwnerBitsAt(nil, d, c.name, c.bits, c.uid)
			switch {
			case c.refused && !errors.Is(err, ErrNotTheOne):
				t.Errorf("old kernel %v: %s: %v, want ErrNotTheOne", oldKernel, c.name, err)
			case !c.refused && (err != nil || before&0o777 != c.before):
				t.Errorf("old kernel %v: %s: before %03o, %v; want %03o", oldKernel, c.name, before, err, c.before)
			}
			if got := permOf(t, filepath.Join(p, c.at)); got != c.want {
				t.Errorf("old kernel %v: %s: %s's mode %03o, want %03o", oldKernel, c.name, c.at, got, c.want)
			}
		}
		if _, err := AddOwnerBitsAt(nil, d, "missing", 0o600, -1); !os.IsNotExist(err) {
			t.Errorf("old kernel %v: missing: %v", oldKernel, err)
		}
		fchmodat = unix.Fchmodat
	}
}

// A directory with a default ACL has it stand in for the umask: one that
// gives its owner nothing (user::---) makes every new file and directory
// in it mode 0, whatever the umask. What this package creates there gets
// the owner's bits of the mode asked for, as under such a umask.
func TestADefaultACLThatGivesTheOwnerNothing(t *testing.T) {
	d, p := tempDir(t)
	// The xattr's binary form (linux/posix_acl_xattr.h): version 2, then
	// (tag, perm, id) entries: the owner, the group and others, all ---.
	acl := []byte{2, 0, 0, 0}
	for _, tag := range []byte{0x01, 0x04, 0x20} {
		acl = append(acl, tag, 0, 0, 0, 0xff, 0xff, 0xff, 0xff)
	}
	if err := unix.Setxattr(p, "system.posix_acl_default", acl, 0); err != nil {
		t.Skipf("no default ACL on this file system (%v): its creations are not tested", err)
	}
	if err := os.Mkdir(filepath.Join(p, "plain"), 0o700); err != nil {
		t.Fatal(err)
	}
	if got := permOf(t, filepath.Join(p, "plain")); got != 0 {
		t.Fatalf("the default ACL gave a plain mkdir mode %03o, not 0: it does not stand in for the umask here", got)
	}
	if _, err := MkdirNew(d, "at", 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := Mkdir(filepath.Join(p, "path"), 0o700); err != nil {
		t.Fatal(err)
	}
	f, err := OpenAt(d, "file", unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	for name, want := range map[string]uint32{"at": 0o700, "path": 0o700, "file": 0o600} {
		if got := permOf(t, filepath.Join(p, name)); got != want {
			t.Errorf("%s: mode %03o, want %03o", name, got, want)
		}
	}
}

// The mode AddOwnerBitsAt gives is that of the one inode it opened: a
// name swapped for another file just before the chmod (by the owner of
// the directory, whose file lacks the owner's bits and carries a setuid
// bit) neither passes that file's mode to what is at the name now nor
// loses the change to it. Before, the mode was read by name and set by
// name: the file swapped in (root's, in life: a shell) became setuid.
func TestAddOwnerBitsAtWorksOnOneInode(t *testing.T) {
	d, p := tempDir(t)
	write(t, filepath.Join(p, "x"), "the owner's")
	must(t, unix.Chmod(filepath.Join(p, "x"), 0o4055)) // os.Chmod takes no raw setuid bit
	write(t, filepath.Join(p, "victim"), "another's")
	must(t, os.Chmod(filepath.Join(p, "victim"), 0o755))
	swapped := false
	fchmodat = func(dirfd int, name string, mode uint32, flags int) error {
		if !swapped {
			swapped = true
			must(t, os.Rename(filepath.Join(p, "x"), filepath.Join(p, "aside")))
			must(t, os.Rename(filepath.Join(p, "victim"), filepath.Join(p, "x")))
		}
		return unix.Fchmodat(dirfd, name, mode, flags)
	}
	defer func() { fchmodat = unix.Fchmodat }()
	if _, err := AddOwnerBitsAt(nil, d, "x", 0o700, -1); err != nil {
		t.Fatal(err)
	}
	if !swapped {
		t.Fatal("the chmod never asked fchmodat: the swap was not made")
	}
	if got := permOf(t, filepath.Join(p, "x")); got != 0o755 {
		t.Errorf("the file swapped in is mode %04o, want 0755 as it was", got)
	}
	var st unix.Stat_t
	must(t, unix.Lstat(filepath.Join(p, "aside"), &st))
	if got := uint32(st.Mode) & 0o7777; got != 0o4755 {
		t.Errorf("the file opened is mode %04o, want 04755 (its own, with the owner's bits)", got)
	}
}

// A chmod answered with success that changes nothing (vfat mounted quiet,
// CIFS without unix extensions, a seccomp filter that answers 0) is not
// taken for the bits given: AddOwnerBitsAt, AddOwnerBits and a creation
// under a umask that took the owner's bits return ErrModeKept, in a
// chmod's PathError, and a creation leaves nothing at its name.
func TestAChmodThatChangesNothingIsNotTakenForBitsGiven(t *testing.T) {
	d, p := tempDir(t)
	if err := os.WriteFile(filepath.Join(p, "file"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(p, "dir"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(p, "file"), 0o200); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(p, "dir"), 0o500); err != nil {
		t.Fatal(err)
	}
	dir, err := os.Open(filepath.Join(p, "dir"))
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()

	fchmod = func(int, uint32) error { return nil }
	fchmodat = func(int, string, uint32, int) error { return nil }
	defer func() { fchmod, fchmodat = unix.Fchmod, unix.Fchmodat }()

	kept := func(what string, err error) {
		t.Helper()
		var pe *os.PathError
		if !errors.As(err, &pe) || pe.Op != "chmod" || !errors.Is(err, ErrModeKept) {
			t.Errorf("%s: %v; want a chmod error, ErrModeKept", what, err)
		}
	}
	for name, was := range map[string]uint32{"file": 0o200, "dir": 0o500} {
		before, err := AddOwnerBitsAt(nil, d, name, 0o700, -1)
		kept("AddOwnerBitsAt "+name, err)
		if before != was {
			t.Errorf("AddOwnerBitsAt %s: mode before %04o, want %04o", name, before, was)
		}
	}
	_, err = AddOwnerBits(nil, dir, 0o700)
	kept("AddOwnerBits", err)
	withUmask(t, 0o377, func() {
		_, err := OpenAt(d, "taken", unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL, 0o600)
		kept("a file created under umask 0377", err)
		made, err := MkdirNew(d, "takendir", 0o700)
		kept("a dir made under umask 0377", err)
		if made {
			t.Error("a dir made under umask 0377: made, though its owner may not use it")
		}
	})
	for _, name := range []string{"taken", "takendir"} {
		if _, err := os.Lstat(filepath.Join(p, name)); !os.IsNotExist(err) {
			t.Errorf("%s: left at its name (%v)", name, err)
		}
	}
}
