package fsat

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

// AddOwnerBits asks for no chmod of what lacks no bit (a file system that
// cannot chmod is never asked to), and gives only the owner's bits of
// bits: 0777 asked of a dir 0500 makes it 0700, the group's and others'
// bits left to the umask's say.
func TestAddOwnerBitsGivesOnlyTheOwnersBitsItLacks(t *testing.T) {
	_, p := tempDir(t)
	f, err := OpenDir(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	must(t, os.Chmod(p, 0o700))
	asked := 0 // chmods asked, by descriptor or through fchmodat2
	fchmod = func(fd int, mode uint32) error { asked++; return unix.Fchmod(fd, mode) }
	fchmodat = func(fd int, name string, mode uint32, flags int) error {
		asked++
		return unix.Fchmodat(fd, name, mode, flags)
	}
	before, err := AddOwnerBits(nil, f, 0o700)
	fchmod, fchmodat = unix.Fchmod, unix.Fchmodat
	if err != nil || before != 0o700 || asked != 0 {
		t.Errorf("AddOwnerBits of a dir 0700: before %04o, %v, %d chmods asked; want 0700, nil, none", before, err, asked)
	}
	must(t, os.Chmod(p, 0o500))
	t.Cleanup(func() { os.Chmod(p, 0o700) })
	if before, err := AddOwnerBits(nil, f, 0o777); err != nil || before != 0o500 {
		t.Fatalf("AddOwnerBits of a dir 0500: before %04o, %v; want 0500", before, err)
	}
	if got := permOf(t, p); got != 0o700 {
		t.Errorf("AddOwnerBits(0777) of a dir 0500: mode %04o; want 0700", got)
	}
}

// An entry that lacks none of the bits asked is left, whoever owns it,
// and is no error: the owner is asked only where a chmod would be made
// (a file system that shows another owner than the maker, an id-mapped
// FUSE or NFS mount, has its entries judged only then).
func TestAnEntryThatLacksNoBitIsLeftWhoeverOwnsIt(t *testing.T) {
	d, p := tempDir(t)
	write(t, filepath.Join(p, "file"), "x")
	must(t, os.Mkdir(filepath.Join(p, "dir"), 0o700))
	for name, bits := range map[string]uint32{"file": 0o600, "dir": 0o700} {
		before, err := AddOwnerBitsAt(nil, d, name, bits, os.Geteuid()+1)
		if err != nil || before&0o777 != bits {
			t.Errorf("%s, whole, of another uid than asked: before %04o, %v; want %04o, nil", name, before, err, bits)
		}
	}
}

// AddOwnerBitsAt closes what it opened: a thousand calls leave no
// descriptor open.
func TestAddOwnerBitsAtLeavesNoDescriptorOpen(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("counts descriptors by /proc/self/fd, which is Linux's")
	}
	d, p := tempDir(t)
	write(t, filepath.Join(p, "file"), "x")
	count := func() int {
		fds, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Fatal(err)
		}
		return len(fds)
	}
	open := count()
	for range 1000 {
		must(t, os.Chmod(filepath.Join(p, "file"), 0o400))
		if _, err := AddOwnerBitsAt(nil, d, "file", 0o600, -1); err != nil {
			t.Fatal(err)
		}
	}
	if now := count(); now > open+10 {
		t.Errorf("%d descriptors open after 1000 calls, %d before; want none kept", now, open)
	}
}

// Where fchmodat2 answers ENOSYS (no such call: a kernel before 6.6
// reached without x/sys's mapping) or EINVAL (a kernel or sandbox that
// takes no AT_EMPTY_PATH there), the bits are given all the same, through
// the descriptor's /proc/self/fd link.
func TestAddOwnerBitsAtWithoutFchmodat2(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("fchmodat2 and its fallback are Linux's")
	}
	for _, refusal := range []error{unix.ENOSYS, unix.EINVAL} {
		fchmodat = func(int, string, uint32, int) error { return refusal }
		d, p := tempDir(t)
		write(t, filepath.Join(p, "file"), "x")
		must(t, os.Chmod(filepath.Join(p, "file"), 0o400))
		before, err := AddOwnerBitsAt(nil, d, "file", 0o600, -1)
		fchmodat = unix.Fchmodat
		if err != nil || before != 0o400 {
			t.Errorf("fchmodat2 refused with %v: before %04o, %v; want 0400, nil", refusal, before, err)
		}
		if got := permOf(t, filepath.Join(p, "file")); got != 0o600 {
			t.Errorf("fchmodat2 refused with %v: mode %04o; want 0600", refusal, got)
		}
	}
}

// OpenRaw's fstat is of the file as it left it: a file it created under
// a umask that took the owner's bits, and gave them back, is reported
// with them.
func TestOpenRawReportsTheModeItGave(t *testing.T) {
	d, _ := tempDir(t)
	withUmask(t, 0o777, func() {
		fd, st, err := OpenRaw(d, "file", unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		unix.Close(fd)
		if got := uint32(st.Mode) & 0o7777; got != 0o600 {
			t.Errorf("OpenRaw's fstat of a file created under umask 0777 says mode %04o; want 0600, as it gave it", got)
		}
	})
}
