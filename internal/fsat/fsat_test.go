package fsat

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"sessdb/internal/testfs"
)

// within fails the test if f does not return in time: a FIFO must never
// block an open or a read.
func within(t *testing.T, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { f(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("blocked")
	}
}

func tempDir(t *testing.T) (*os.File, string) {
	t.Helper()
	p := t.TempDir()
	d, err := OpenDir(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d, p
}

func write(t *testing.T, p, data string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

// ReadSmallFile judges what it opened: only a regular file of at most max
// bytes is read; every other kind is ErrNotRegular, never followed and
// never blocking, and a file over the cap is ErrTooLarge.
func TestReadSmallFileKinds(t *testing.T) {
	const max = 4096
	d, p := tempDir(t)
	write(t, filepath.Join(p, "one"), "x")
	write(t, filepath.Join(p, "max"), strings.Repeat("x", max))
	write(t, filepath.Join(p, "empty"), "")
	write(t, filepath.Join(p, "over"), strings.Repeat("x", max+1))
	must(t, os.Mkdir(filepath.Join(p, "dir"), 0o700))
	must(t, unix.Mkfifo(filepath.Join(p, "fifo"), 0o600))
	must(t, os.Symlink("one", filepath.Join(p, "link")))
	must(t, os.Symlink("nowhere", filepath.Join(p, "dangling")))
	cases := map[string]struct {
		n   int
		err error
	}{
		"one": {1, nil}, "max": {max, nil}, "empty": {0, nil}, "over": {0, ErrTooLarge},
		"dir": {0, ErrNotRegular}, "fifo": {0, ErrNotRegular}, "link": {0, ErrNotRegular},
		"dangling": {0, ErrNotRegular}, "missing": {0, unix.ENOENT},
		"sock": {0, ErrNotRegular},
	}
	testfs.Socket(t, filepath.Join(p, "sock"))
	for name, c := range cases {
		within(t, func() {
			b, err := ReadSmallFile(d, name, max)
			if len(b) != c.n || (c.err == nil) != (err == nil) || c.err != nil && !errors.Is(err, c.err) {
				t.Errorf("%s: %d bytes, %v; want %d bytes, %v", name, len(b), err, c.n, c.err)
			}
		})
	}
	// A device: /dev/null, read through a descriptor of /dev.
	dev, err := OpenDir("/dev")
	must(t, err)
	defer dev.Close()
	if _, err := ReadSmallFile(dev, "null", max); !errors.Is(err, ErrNotRegular) {
		t.Errorf("/dev/null: %v, want ErrNotRegular", err)
	}
}

// ReadConfigFile follows a link (a mounted secret is one) but reads only a
// regular file of at most max bytes: a FIFO, a directory and a device are
// ErrNotRegular without blocking, a larger file ErrTooLarge.
func TestReadConfigFileKinds(t *testing.T) {
	const max = 4096
	_, p := tempDir(t)
	write(t, filepath.Join(p, "one"), "x")
	write(t, filepath.Join(p, "over"), strings.Repeat("x", max+1))
	must(t, os.Mkdir(filepath.Join(p, "dir"), 0o700))
	must(t, unix.Mkfifo(filepath.Join(p, "fifo"), 0o600))
	must(t, os.Symlink("one", filepath.Join(p, "link")))
	must(t, os.Symlink("fifo", filepath.Join(p, "link-to-fifo")))
	cases := map[string]struct {
		n   int
		err error
	}{
		"one": {1, nil}, "link": {1, nil}, "over": {0, ErrTooLarge}, "dir": {0, ErrNotRegular},
		"fifo": {0, ErrNotRegular}, "link-to-fifo": {0, ErrNotRegular}, "missing": {0, unix.ENOENT},
		"/dev/zero": {0, ErrNotRegular},
	}
	for name, c := range cases {
		path := name
		if !filepath.IsAbs(name) {
			path = filepath.Join(p, name)
		}
		within(t, func() {
			b, err := ReadConfigFile(path, max)
			if len(b) != c.n || (c.err == nil) != (err == nil) || c.err != nil && !errors.Is(err, c.err) {
				t.Errorf("%s: %d bytes, %v; want %d bytes, %v", name, len(b), err, c.n, c.err)
			}
		})
	}
}

// The read is capped by itself, not by the fstat: a file that grows past
// the cap between the two is refused, not read without bound. A pipe
// stands in for the grown file.
func TestReadCapped(t *testing.T) {
	const max = 4096
	for _, n := range []int{0, 1, max, max + 1, 3 * max} {
		r, w, err := os.Pipe()
		must(t, err)
		want := strings.Repeat("x", n)
		go func() {
			w.WriteString(want)
			w.Close()
		}()
		var got []byte
		within(t, func() { got, err = readCapped(r, max) })
		r.Close()
		if wantOK := n <= max; (err == nil) != wantOK || err == nil && string(got) != want || !wantOK && !errors.Is(err, ErrTooLarge) {
			t.Errorf("%d bytes: readCapped = %d bytes, %v; want ok %v", n, len(got), err, wantOK)
		}
	}
}

// OpenRaw never follows a link at the name (ELOOP on every system, FreeBSD
// included) and never blocks on a FIFO; it hands back the fstat of what it
// opened.
func TestOpenRaw(t *testing.T) {
	d, p := tempDir(t)
	write(t, filepath.Join(p, "f"), "abc")
	must(t, os.Symlink("f", filepath.Join(p, "link")))
	must(t, unix.Mkfifo(filepath.Join(p, "fifo"), 0o600))
	if _, _, err := OpenRaw(d, "link", unix.O_RDONLY, 0); !errors.Is(err, unix.ELOOP) {
		t.Errorf("link: %v, want ELOOP", err)
	}
	within(t, func() {
		fd, st, err := OpenRaw(d, "fifo", unix.O_RDONLY, 0)
		if err != nil || st.Mode&unix.S_IFMT != unix.S_IFIFO {
			t.Errorf("fifo: %v, mode %o", err, st.Mode)
		}
		unix.Close(fd)
	})
	fd, st, err := OpenRaw(d, "f", unix.O_RDONLY, 0)
	must(t, err)
	f, err := NewFile(fd, &st, Join(d, "f"))
	must(t, err)
	defer f.Close()
	if !IsRegular(&st) || st.Size != 3 {
		t.Errorf("f: mode %o size %d", st.Mode, st.Size)
	}
	if flags, err := unix.FcntlInt(f.Fd(), unix.F_GETFL, 0); err != nil || flags&unix.O_NONBLOCK != 0 {
		t.Errorf("a regular file is left non-blocking: flags %#x, %v", flags, err)
	}
	if _, err := OpenDirAt(d, "link"); !errors.Is(err, ErrNotDir) {
		t.Errorf("OpenDirAt of a link: %v, want ErrNotDir", err)
	}
}

// Remove removes the link itself, an empty directory, a file; nothing is
// not an error; a directory with entries stays.
func TestRemove(t *testing.T) {
	d, p := tempDir(t)
	write(t, filepath.Join(p, "f"), "x")
	must(t, os.Symlink("f", filepath.Join(p, "link")))
	must(t, os.Mkdir(filepath.Join(p, "empty"), 0o700))
	must(t, os.Mkdir(filepath.Join(p, "full"), 0o700))
	write(t, filepath.Join(p, "full", "x"), "x")
	for _, n := range []string{"link", "empty", "missing"} {
		if err := Remove(d, n); err != nil {
			t.Errorf("Remove %s: %v", n, err)
		}
		if _, err := os.Lstat(filepath.Join(p, n)); !os.IsNotExist(err) {
			t.Errorf("%s still there: %v", n, err)
		}
	}
	if _, err := os.Stat(filepath.Join(p, "f")); err != nil {
		t.Errorf("the link's target went too: %v", err)
	}
	if err := Remove(d, "full"); !errors.Is(err, unix.ENOTEMPTY) && !errors.Is(err, unix.EEXIST) {
		t.Errorf("Remove of a directory with entries: %v", err)
	}
	must(t, Remove(d, "f"))
	if _, err := os.Lstat(filepath.Join(p, "f")); !os.IsNotExist(err) {
		t.Errorf("f still there: %v", err)
	}
}

// RenameNoReplace moves a name to a free one and refuses an existing one,
// leaving both files as they were; so does its link-then-unlink fallback.
func TestRenameNoReplace(t *testing.T) {
	for _, c := range []struct {
		name   string
		rename func(d *os.File, from, to string) error
	}{
		{"native", RenameNoReplace},
		{"link-then-unlink", func(d *os.File, from, to string) error { return linkThenUnlink(int(d.Fd()), from, to) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			d, p := tempDir(t)
			write(t, filepath.Join(p, "a"), "A")
			write(t, filepath.Join(p, "b"), "B")
			if err := c.rename(d, "a", "b"); !errors.Is(err, unix.EEXIST) {
				t.Fatalf("over an existing name: %v, want EEXIST", err)
			}
			for n, want := range map[string]string{"a": "A", "b": "B"} {
				if b, err := os.ReadFile(filepath.Join(p, n)); err != nil || string(b) != want {
					t.Errorf("%s after the refused rename: %q, %v", n, b, err)
				}
			}
			must(t, c.rename(d, "a", "c"))
			if _, err := os.Lstat(filepath.Join(p, "a")); !os.IsNotExist(err) {
				t.Errorf("a still there: %v", err)
			}
			if b, err := os.ReadFile(filepath.Join(p, "c")); err != nil || string(b) != "A" {
				t.Errorf("c: %q, %v", b, err)
			}
		})
	}
}

// SetMtime sets the time to the nanosecond on the open file.
func TestSetMtime(t *testing.T) {
	d, p := tempDir(t)
	write(t, filepath.Join(p, "f"), "x")
	f, err := OpenAt(d, "f", unix.O_RDONLY, 0)
	must(t, err)
	defer f.Close()
	at := time.Date(2024, 5, 6, 7, 8, 9, 123456789, time.UTC)
	must(t, SetMtime(d, "f", f, at))
	st, err := Fstat(f)
	must(t, err)
	if got := time.Unix(st.Mtim.Unix()); !got.Equal(at) {
		t.Errorf("mtime %v, want %v", got, at)
	}
}

// Flock says EWOULDBLOCK for a lock held through another descriptor.
func TestFlock(t *testing.T) {
	d, p := tempDir(t)
	write(t, filepath.Join(p, "f"), "x")
	a, err := OpenAt(d, "f", unix.O_RDONLY, 0)
	must(t, err)
	defer a.Close()
	b, err := OpenAt(d, "f", unix.O_RDONLY, 0)
	must(t, err)
	defer b.Close()
	must(t, Flock(a, unix.LOCK_EX|unix.LOCK_NB))
	if err := Flock(b, unix.LOCK_EX|unix.LOCK_NB); !errors.Is(err, unix.EWOULDBLOCK) {
		t.Errorf("second lock: %v, want EWOULDBLOCK", err)
	}
}

// FlockedNow: a free flock is not held, one held through another
// descriptor is; a name gone is ENOENT, and so is a name removed, or led
// to another file, between the open and the flock: the file then had is
// at no name.
func TestFlockedNow(t *testing.T) {
	d, p := tempDir(t)
	f := filepath.Join(p, "f")
	write(t, f, "x")
	if held, err := FlockedNow(d, "f"); held || err != nil {
		t.Errorf("a free flock: %v, %v; want false, nil", held, err)
	}
	a, err := OpenAt(d, "f", unix.O_RDONLY, 0)
	must(t, err)
	defer a.Close()
	must(t, Flock(a, unix.LOCK_EX|unix.LOCK_NB))
	if held, err := FlockedNow(d, "f"); !held || err != nil {
		t.Errorf("a flock held: %v, %v; want true, nil", held, err)
	}
	must(t, Flock(a, unix.LOCK_UN))
	if held, err := FlockedNow(d, "gone"); held || !IsNotExist(err) {
		t.Errorf("no file at the name: %v, %v; want false, ENOENT", held, err)
	}
	defer func() { TestHookFlockedNowOpened = nil }()
	for what, swap := range map[string]func(){
		"removed":  func() { must(t, os.Remove(f)) },
		"replaced": func() { write(t, f+".new", "y"); must(t, os.Rename(f+".new", f)) },
	} {
		TestHookFlockedNowOpened = func(n string) {
			if n == "f" {
				swap()
			}
		}
		if held, err := FlockedNow(d, "f"); held || !IsNotExist(err) {
			t.Errorf("a file %s between the open and the flock: %v, %v; want false, ENOENT", what, held, err)
		}
		TestHookFlockedNowOpened = nil
		write(t, f, "x")
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// A device node is refused by ReadSmallFile (the ticket, the legacy
// sidecars) before it is opened: its open would run the driver.
func TestReadSmallFileNeverOpensADevice(t *testing.T) {
	d, p := tempDir(t)
	node := filepath.Join(p, "venue")
	opens, stop, err := testfs.WatchedNullDevice(node)
	if err != nil {
		t.Skipf("no device node whose opens can be watched here: %v", err)
	}
	defer stop()
	if _, err := ReadSmallFile(d, "venue", 4096); !errors.Is(err, ErrNotRegular) {
		t.Errorf("a device: %v, want ErrNotRegular", err)
	}
	if n := opens(); n != 0 {
		t.Errorf("ReadSmallFile opened the device %d times", n)
	}
}

func TestMoved(t *testing.T) {
	root := t.TempDir()
	rd, err := os.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	if err := os.Mkdir(filepath.Join(root, "k"), 0o700); err != nil {
		t.Fatal(err)
	}
	kd, err := OpenDirAt(rd, "k")
	if err != nil {
		t.Fatal(err)
	}
	defer kd.Close()
	if moved, err := Moved(rd, "k", kd); moved || err != nil {
		t.Fatalf("a dir at its name: moved %v, %v", moved, err)
	}
	if err := os.Rename(filepath.Join(root, "k"), filepath.Join(root, ".aside")); err != nil {
		t.Fatal(err)
	}
	if moved, err := Moved(rd, "k", kd); !moved || err != nil {
		t.Fatalf("a dir gone from its name: moved %v, %v", moved, err)
	}
	if err := os.Symlink(".aside", filepath.Join(root, "k")); err != nil {
		t.Fatal(err)
	}
	if moved, err := Moved(rd, "k", kd); !moved || err != nil {
		t.Fatalf("a link to the dir at its name: moved %v, %v (taken for the dir, followed)", moved, err)
	}
}

// A dir removed under its descriptor is moved, also where its file system
// no longer answers an fstat for it: a FUSE daemon that works by path says
// ENOENT, an NFS client ESTALE. migrate's key reaped while it waited for
// the lock failed there ("open …/meta.db: no such file or directory")
// where on ext4 it is skipped as vanished. Any other fstat failure is
// still the error.
func TestMovedOfADirRemovedWhereItIsForgotten(t *testing.T) {
	defer func(f func(*os.File) (unix.Stat_t, error)) { fstatHeld = f }(fstatHeld)
	root := t.TempDir()
	rd, err := os.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	for _, errno := range []unix.Errno{unix.ENOENT, unix.ESTALE, unix.EIO} {
		fstatHeld = func(f *os.File) (unix.Stat_t, error) {
			// Removed: no links left, or (on such a file system itself)
			// already forgotten.
			st, err := Fstat(f)
			if err == nil && st.Nlink == 0 || IsGone(err) {
				return unix.Stat_t{}, &os.PathError{Op: "fstat", Path: f.Name(), Err: errno}
			}
			return st, err
		}
		if err := os.Mkdir(filepath.Join(root, "k"), 0o700); err != nil {
			t.Fatal(err)
		}
		kd, err := OpenDirAt(rd, "k")
		if err != nil {
			t.Fatal(err)
		}
		if moved, err := Moved(rd, "k", kd); moved || err != nil {
			t.Fatalf("%v: a dir at its name: moved %v, %v", errno, moved, err)
		}
		if err := os.Remove(filepath.Join(root, "k")); err != nil {
			t.Fatal(err)
		}
		moved, err := Moved(rd, "k", kd)
		kd.Close()
		if errno == unix.EIO {
			if err == nil || !errors.Is(err, unix.EIO) {
				t.Errorf("an fstat that failed with EIO: moved %v, %v; want the EIO", moved, err)
			}
			continue
		}
		if !moved || err != nil {
			t.Errorf("a removed dir whose fstat says %v: moved %v, %v; want moved", errno, moved, err)
		}
	}
}

func TestMovedOnAnIOErrorIsTheError(t *testing.T) {
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, "k"), 0o700); err != nil {
		t.Fatal(err)
	}
	kd, err := OpenDir(filepath.Join(root, "k"))
	if err != nil {
		t.Fatal(err)
	}
	defer kd.Close()
	nd, err := os.Create(filepath.Join(root, "file"))
	if err != nil {
		t.Fatal(err)
	}
	defer nd.Close()
	// The stat of the name fails (ENOTDIR): not known, so not "not moved".
	if moved, err := Moved(nd, "k", kd); err == nil || !errors.Is(err, unix.ENOTDIR) {
		t.Fatalf("a stat of the name that failed: moved %v, %v; want the ENOTDIR", moved, err)
	}
}

// OpenDirAt opens a directory at the name and nothing else: a link to a
// directory is ErrNotDir, never followed (a key dir made a link would
// send every write elsewhere), as a file is; a name that is not there is
// fs.ErrNotExist, not ErrNotDir. OpenDir follows the operator's path but
// opens only a directory, and fails, with no file, where there is none.
// (Mutation sweep: O_NOFOLLOW or O_DIRECTORY dropped from OpenDirAt's
// open, its ELOOP test inverted, O_DIRECTORY dropped from OpenDir's, or
// OpenDir's error return dropped: no fsat test held them; the existing
// link pointed at a file, which O_DIRECTORY alone refuses.)
func TestOpenDirAtOpensOnlyADirectory(t *testing.T) {
	d, p := tempDir(t)
	must(t, os.Mkdir(filepath.Join(p, "dir"), 0o700))
	write(t, filepath.Join(p, "f"), "abc")
	must(t, os.Symlink("dir", filepath.Join(p, "dirlink")))
	for _, name := range []string{"dirlink", "f"} {
		if f, err := OpenDirAt(d, name); !errors.Is(err, ErrNotDir) {
			if f != nil {
				f.Close()
			}
			t.Errorf("OpenDirAt(%s) = %v; want ErrNotDir", name, err)
		}
	}
	if f, err := OpenDirAt(d, "gone"); !errors.Is(err, os.ErrNotExist) || errors.Is(err, ErrNotDir) {
		t.Errorf("OpenDirAt(gone) = %v, %v; want fs.ErrNotExist alone", f, err)
	}
	f, err := OpenDirAt(d, "dir")
	must(t, err)
	f.Close()
	if f, err := OpenDir(filepath.Join(p, "f")); !errors.Is(err, unix.ENOTDIR) {
		if f != nil {
			f.Close()
		}
		t.Errorf("OpenDir(a file) = %v; want ENOTDIR", err)
	}
	if f, err := OpenDir(filepath.Join(p, "gone")); f != nil || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("OpenDir(gone) = %v, %v; want no file, fs.ErrNotExist", f, err)
	}
}

// Every descriptor fsat opens is close-on-exec: a child a worker starts
// (a job's container runtime, a hook) must not inherit a key dir or a
// transcript, let alone a locked meta.db. (Mutation sweep: O_CLOEXEC
// dropped from OpenDir's, OpenDirAt's or openFlags's open: no test held
// them.)
func TestOpensAreCloseOnExec(t *testing.T) {
	d, p := tempDir(t)
	must(t, os.Mkdir(filepath.Join(p, "dir"), 0o700))
	write(t, filepath.Join(p, "f"), "abc")
	sub, err := OpenDirAt(d, "dir")
	must(t, err)
	defer sub.Close()
	f, err := OpenAt(d, "f", unix.O_RDONLY, 0)
	must(t, err)
	defer f.Close()
	for name, fd := range map[string]uintptr{"OpenDir": d.Fd(), "OpenDirAt": sub.Fd(), "OpenAt": f.Fd()} {
		if flags, err := unix.FcntlInt(fd, unix.F_GETFD, 0); err != nil || flags&unix.FD_CLOEXEC == 0 {
			t.Errorf("%s: descriptor flags %#x, %v; want FD_CLOEXEC", name, flags, err)
		}
	}
}

// The primitives do what they say and report what failed: MkdirNew tells
// a directory it made from one already there and fails in a directory
// that is gone, as MkdirAt does; RenameAt, UnlinkAt and RmdirAt act and
// fail as their system calls do (a missing name, a directory to
// UnlinkAt, a non-empty one to RmdirAt); OpenAt of a missing name is an
// error with no file. (Mutation sweep: each one's error return dropped or
// made nil, MkdirNew's booleans flipped, OpenAt's error return dropped,
// which gave (nil, nil): no fsat test held them; the store and the fleet
// call them on paths that seldom fail.)
func TestPrimitivesActAndReportTheirErrors(t *testing.T) {
	d, p := tempDir(t)
	if made, err := MkdirNew(d, "a", 0o700); !made || err != nil {
		t.Errorf("MkdirNew(a) = %v, %v; want made", made, err)
	}
	if made, err := MkdirNew(d, "a", 0o700); made || err != nil {
		t.Errorf("MkdirNew(a) again = %v, %v; want not made, no error", made, err)
	}
	write(t, filepath.Join(p, "f"), "abc")
	must(t, RenameAt(d, "f", "g"))
	if _, err := os.Lstat(filepath.Join(p, "g")); err != nil {
		t.Errorf("RenameAt(f, g) left no g: %v", err)
	}
	if err := RenameAt(d, "f", "h"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("RenameAt(gone) = %v; want fs.ErrNotExist", err)
	}
	if err := UnlinkAt(d, "a"); err == nil {
		t.Error("UnlinkAt(a directory) = nil; want an error")
	}
	must(t, UnlinkAt(d, "g"))
	if err := UnlinkAt(d, "g"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("UnlinkAt(gone) = %v; want fs.ErrNotExist", err)
	}
	write(t, filepath.Join(p, "a", "x"), "x")
	if err := RmdirAt(d, "a"); !errors.Is(err, unix.ENOTEMPTY) && !errors.Is(err, unix.EEXIST) {
		t.Errorf("RmdirAt(a non-empty directory) = %v; want ENOTEMPTY", err)
	}
	must(t, os.Remove(filepath.Join(p, "a", "x")))
	must(t, RmdirAt(d, "a"))
	if err := RmdirAt(d, "a"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("RmdirAt(gone) = %v; want fs.ErrNotExist", err)
	}
	if f, err := OpenAt(d, "gone", unix.O_RDONLY, 0); f != nil || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("OpenAt(gone) = %v, %v; want no file, fs.ErrNotExist", f, err)
	}
	// A directory removed under its descriptor: nothing can be made in it.
	must(t, os.Mkdir(filepath.Join(p, "b"), 0o700))
	b, err := OpenDirAt(d, "b")
	must(t, err)
	defer b.Close()
	must(t, os.Remove(filepath.Join(p, "b")))
	if made, err := MkdirNew(b, "c", 0o700); made || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("MkdirNew in a removed dir = %v, %v; want not made, fs.ErrNotExist", made, err)
	}
	if err := MkdirAt(b, "c", 0o700); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("MkdirAt in a removed dir = %v; want fs.ErrNotExist", err)
	}
}

// ReadDirNames lists a directory's names, and fails for a directory
// removed under its descriptor (fs.ErrNotExist) and for a file
// (ErrNotDir); SyncDir succeeds on a
// directory and reports a failing fsync (here: of a closed descriptor);
// Join of "." is the directory's own path, as errors show it. (Mutation
// sweep: ReadDirNames's open error dropped or inverted, the latter
// listing nothing, with no error; SyncDir made nil, its error dropped or
// inverted, the last failing every fsync; Join's "." case changed: no
// fsat test held them.)
func TestReadDirNamesSyncDirAndJoin(t *testing.T) {
	d, p := tempDir(t)
	write(t, filepath.Join(p, "f"), "abc")
	must(t, os.Mkdir(filepath.Join(p, "sub"), 0o700))
	names, err := ReadDirNames(d)
	if err != nil || strings.Join(sorted(names), " ") != "f sub" {
		t.Errorf("ReadDirNames = %v, %v; want f sub", names, err)
	}
	if err := SyncDir(d); err != nil {
		t.Errorf("SyncDir = %v", err)
	}
	if j := Join(d, "."); j != p {
		t.Errorf("Join(dir, \".\") = %q, want %q", j, p)
	}
	sub, err := OpenDirAt(d, "sub")
	must(t, err)
	must(t, os.Remove(filepath.Join(p, "sub")))
	if names, err := ReadDirNames(sub); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("ReadDirNames of a removed dir = %v, %v; want fs.ErrNotExist", names, err)
	}
	f, err := OpenAt(d, "f", unix.O_RDONLY, 0)
	must(t, err)
	defer f.Close()
	if names, err := ReadDirNames(f); !errors.Is(err, ErrNotDir) {
		t.Errorf("ReadDirNames of a file = %v, %v; want ErrNotDir", names, err)
	}
	sub.Close()
	if err := SyncDir(sub); err == nil {
		t.Error("SyncDir of a closed descriptor = nil; want its error")
	}
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	slices.Sort(out)
	return out
}

// A regular file swapped in at the name between OpenRegularAt's lstat and
// its open (another inode renamed over it) is ErrNotRegular, as the doc
// says, and what was opened is closed (mutation sweep: the inode check
// made an `&&` with the kind's, which let the swapped file through, or
// the close of the refused descriptor deleted; nothing could swap the
// name there before this hook).
func TestOpenRegularAtRefusesAFileSwappedAfterItsLstat(t *testing.T) {
	d, p := tempDir(t)
	write(t, filepath.Join(p, "f"), "abc")
	write(t, filepath.Join(p, "other"), "other")
	defer func() { testHookLstated = nil }()
	swapped := 0
	testHookLstated = func() {
		swapped++
		must(t, os.Rename(filepath.Join(p, "other"), filepath.Join(p, "f")))
	}
	f, _, err := OpenRegularAt(d, "f")
	testHookLstated = nil
	if f != nil {
		f.Close()
	}
	if swapped != 1 || !errors.Is(err, ErrNotRegular) {
		t.Fatalf("OpenRegularAt of a file swapped after %d lstats = %v, %v; want ErrNotRegular", swapped, f != nil, err)
	}
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	for _, fd := range fds {
		if target, _ := os.Readlink(filepath.Join("/proc/self/fd", fd.Name())); target == filepath.Join(p, "f") {
			t.Fatalf("descriptor %s still has the refused file open", fd.Name())
		}
	}
}

// OpenRegular (ReadConfigFile's open) refuses a file swapped in between
// its stat and its open, a regular file of another inode or a FIFO, and
// never blocks on the FIFO (mutation sweep: the check after the open
// skipped or made an `&&`, its error's assignment deleted, O_NONBLOCK
// dropped: no test could swap the path there).
func TestOpenRegularRefusesAPathSwappedAfterItsStat(t *testing.T) {
	_, p := tempDir(t)
	defer func() { testHookLstated = nil }()
	for _, kind := range []string{"regular", "fifo"} {
		path := filepath.Join(p, "config-"+kind)
		write(t, path, "secret\n")
		other := filepath.Join(p, "other-"+kind)
		if kind == "fifo" {
			must(t, unix.Mkfifo(other, 0o600))
		} else {
			write(t, other, "other\n")
		}
		testHookLstated = func() { must(t, os.Rename(other, path)) }
		within(t, func() {
			b, err := ReadConfigFile(path, 100)
			if !errors.Is(err, ErrNotRegular) {
				t.Errorf("%s swapped in: ReadConfigFile = %q, %v; want ErrNotRegular", kind, b, err)
			}
		})
		testHookLstated = nil
	}
}

// A file whose size says it is within the cap and whose content is not
// (a /proc file says 0 bytes; any file can grow after the fstat) is
// ErrTooLarge from the capped read, never (nil, nil); a file of exactly
// the cap is read whole (mutation sweep: the capped read's error return
// dropped in ReadSmallFile and ReadConfigFile, which returned no bytes
// and no error, and ReadConfigFile's `size > max` made `>=`; no test
// held them).
func TestReadsAreCappedByContentNotSize(t *testing.T) {
	proc, err := OpenDir("/proc/self")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	defer proc.Close()
	if b, err := ReadSmallFile(proc, "status", 10); !errors.Is(err, ErrTooLarge) {
		t.Errorf("ReadSmallFile(/proc/self/status, 10) = %d bytes, %v; want ErrTooLarge", len(b), err)
	}
	if b, err := ReadConfigFile("/proc/self/status", 10); !errors.Is(err, ErrTooLarge) {
		t.Errorf("ReadConfigFile(/proc/self/status, 10) = %d bytes, %v; want ErrTooLarge", len(b), err)
	}
	_, p := tempDir(t)
	write(t, filepath.Join(p, "ten"), "0123456789")
	if b, err := ReadConfigFile(filepath.Join(p, "ten"), 10); err != nil || string(b) != "0123456789" {
		t.Errorf("ReadConfigFile of exactly the cap = %q, %v; want it whole", b, err)
	}
}

// Touch sets the mtime to now; Touch and SetMtime report a failing call
// (here: on a closed descriptor, EBADF) rather than leave the time as it
// was in silence (mutation sweep: Touch made nil, its error dropped or
// inverted; touch's and setMtime's errno checks dropped or inverted: no
// test held them).
func TestTouchAndSetMtimeActAndReportTheirErrors(t *testing.T) {
	d, p := tempDir(t)
	write(t, filepath.Join(p, "f"), "x")
	f, err := OpenAt(d, "f", unix.O_RDONLY, 0)
	must(t, err)
	old := time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)
	must(t, SetMtime(d, "f", f, old))
	before := time.Now().Add(-time.Minute)
	must(t, Touch(f))
	st, err := Fstat(f)
	must(t, err)
	if got := time.Unix(st.Mtim.Unix()); got.Before(before) {
		t.Errorf("Touch left the mtime at %v", got)
	}
	f.Close()
	if err := Touch(f); err == nil {
		t.Error("Touch of a closed descriptor = nil; want its error")
	}
	if err := SetMtime(d, "f", f, old); err == nil {
		t.Error("SetMtime of a closed descriptor = nil; want its error")
	}
}

// AccessAt judges the name itself, never a link's target, by the effective
// ids, and its error names the path; a mode that does not let is EACCES,
// even for root (who may execute only a file with some x bit set).
func TestAccessAt(t *testing.T) {
	d, p := tempDir(t)
	must(t, os.Symlink("missing", filepath.Join(p, "link")))
	write(t, filepath.Join(p, "plain"), "x")
	if err := AccessAt(d, "link", unix.W_OK); err != nil {
		t.Errorf("a link to nothing: %v; want it judged itself, not followed", err)
	}
	var pe *os.PathError
	if err := AccessAt(d, "missing", unix.W_OK); !IsNotExist(err) || !errors.As(err, &pe) || pe.Op != "access" || pe.Path != filepath.Join(p, "missing") {
		t.Errorf("a missing name: %v; want access %s: ENOENT", err, filepath.Join(p, "missing"))
	}
	if err := AccessAt(d, "plain", unix.X_OK); !errors.Is(err, unix.EACCES) {
		t.Errorf("a file 0600, to execute: %v; want EACCES", err)
	}
	if err := AccessAt(d, ".", unix.W_OK|unix.X_OK); err != nil {
		t.Errorf("its own dir: %v", err)
	}
}
