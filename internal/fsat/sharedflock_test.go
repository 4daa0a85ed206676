package fsat

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"sessdb/internal/testfs"
)

// SharedFlockAt's flock is shared: it keeps out a holder of the
// exclusive one (a creator, a writer), and no other look. Two looks at a
// temp at once (a check's beside a repair's, which holds its file through
// the removal) both have it, and FlockedNow, asked while a look holds it,
// says no one holds the exclusive flock; the exclusive one is still kept
// out. With the look's flock exclusive, one look took the other for a
// creation in flight.
func TestSharedFlockAtKeepsOutAWriterAndNoOtherLook(t *testing.T) {
	d, p := tempDir(t)
	write(t, filepath.Join(p, "f"), "")
	first, err := SharedFlockAt(d, "f")
	if first == nil || err != nil {
		t.Fatalf("SharedFlockAt of a free file: %v, %v; want it had", first, err)
	}
	defer first.Close()
	second, err := SharedFlockAt(d, "f")
	if second == nil || err != nil {
		t.Errorf("SharedFlockAt beside another look: %v, %v; want it had too", second, err)
	}
	if second != nil {
		second.Close()
	}
	if held, err := FlockedNow(d, "f"); held || err != nil {
		t.Errorf("FlockedNow beside a look: %v, %v; want false, nil", held, err)
	}
	w, err := OpenAt(d, "f", unix.O_RDWR, 0)
	must(t, err)
	defer w.Close()
	if err := Flock(w, unix.LOCK_EX|unix.LOCK_NB); !errors.Is(err, unix.EWOULDBLOCK) {
		t.Errorf("a writer's exclusive flock while a look holds the file: %v; want EWOULDBLOCK", err)
	}
}

// A look at the name after the flock that fails otherwise than "gone"
// (here ENOTDIR: the directory on the path replaced by a file between
// the open and the flock) says nothing of what is at the name: it is
// SharedFlockAt's error, with no file, never a file had as if still at
// its name.
func TestSharedFlockAtWhoseLookAfterTheFlockFailsIsTheError(t *testing.T) {
	d, p := tempDir(t)
	must(t, os.Mkdir(filepath.Join(p, "sub"), 0o700))
	write(t, filepath.Join(p, "sub", "f"), "")
	TestHookFlockedNowOpened = func(string) {
		must(t, os.Rename(filepath.Join(p, "sub"), filepath.Join(p, "sub.old")))
		write(t, filepath.Join(p, "sub"), "")
	}
	defer func() { TestHookFlockedNowOpened = nil }()
	f, err := SharedFlockAt(d, "sub/f")
	if f != nil {
		f.Close()
	}
	if f != nil || !errors.Is(err, unix.ENOTDIR) {
		t.Errorf("SharedFlockAt whose look after the flock failed: %v, %v; want no file and ENOTDIR", f, err)
	}
}

// FlockedNow lets go of its shared flock before it returns, even where a
// child forked meanwhile holds a copy of its descriptor until it execs
// (here a dup made between its open and its flock, which shares the open
// file description a flock belongs to): a close alone kept the flock,
// and a writer asking without waiting found the file locked.
func TestFlockedNowLetsGoOfItsFlockThoughACopyOfItsDescriptorLives(t *testing.T) {
	d, p := tempDir(t)
	write(t, filepath.Join(p, "f"), "")
	TestHookFlockedNowOpened = func(string) {
		copied, ok, err := testfs.DupDescriptorOf(filepath.Join(p, "f"))
		if !ok {
			t.Skip("no /proc/self/fd to find FlockedNow's descriptor in")
		}
		must(t, err)
		t.Cleanup(func() { unix.Close(copied) })
	}
	defer func() { TestHookFlockedNowOpened = nil }()
	if held, err := FlockedNow(d, "f"); held || err != nil {
		t.Fatalf("FlockedNow of a free file: %v, %v", held, err)
	}
	TestHookFlockedNowOpened = nil
	w, err := OpenAt(d, "f", unix.O_RDWR, 0)
	must(t, err)
	defer w.Close()
	if err := Flock(w, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		t.Errorf("a writer's flock after FlockedNow: %v; want it had", err)
	}
}

// A flock SharedFlockAt had and then gives back, because the name no
// longer leads to the file (moved: renamed away) or because the look at
// the name failed (ENOTDIR), is let go of though a child forked meanwhile
// holds a copy of the descriptor until it execs: the file's creator or
// writer, wherever its name now is, is not kept from its exclusive flock
// by a look that returned no file. The copy is made by hand between the
// open and the flock, where a fork's would be.
func TestSharedFlockAtLetsGoOfAFlockItGivesBackThoughACopyOfItsDescriptorLives(t *testing.T) {
	for _, c := range []struct {
		why     string
		want    error
		move    func(p string) // between the open and the flock
		movedTo string         // where the file is once moved
	}{
		{"renamed away", unix.ENOENT, func(p string) {
			must(t, os.Rename(filepath.Join(p, "sub", "f"), filepath.Join(p, "sub", "g")))
		}, "sub/g"},
		{"its look failed", unix.ENOTDIR, func(p string) {
			must(t, os.Rename(filepath.Join(p, "sub"), filepath.Join(p, "sub.old")))
			write(t, filepath.Join(p, "sub"), "")
		}, "sub.old/f"},
	} {
		d, p := tempDir(t)
		must(t, os.Mkdir(filepath.Join(p, "sub"), 0o700))
		write(t, filepath.Join(p, "sub", "f"), "")
		TestHookFlockedNowOpened = func(string) {
			copied, ok, err := testfs.DupDescriptorOf(filepath.Join(p, "sub", "f"))
			if !ok {
				t.Skip("no /proc/self/fd to find SharedFlockAt's descriptor in")
			}
			must(t, err)
			t.Cleanup(func() { unix.Close(copied) })
			c.move(p)
		}
		f, err := SharedFlockAt(d, "sub/f")
		TestHookFlockedNowOpened = nil
		if f != nil {
			f.Close()
		}
		if f != nil || !errors.Is(err, c.want) {
			t.Fatalf("%s: SharedFlockAt = %v, %v; want no file and %v", c.why, f, err, c.want)
		}
		w, err := OpenAt(d, c.movedTo, unix.O_RDWR, 0)
		must(t, err)
		if err := Flock(w, unix.LOCK_EX|unix.LOCK_NB); err != nil {
			t.Errorf("%s: a writer's flock after SharedFlockAt gave the file back: %v; want it had", c.why, err)
		}
		w.Close()
	}
}
