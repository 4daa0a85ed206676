package db

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"sessdb/internal/testfs"
)

// A writer opened with HoldTurnstile keeps the key dir's turnstile until
// Close, and no longer, whether or not the caller closed the dir it
// opened with meanwhile; AwaitTurnstile
// waits for it (and gives up at its timeout with a flock PathError naming
// the dir and wrapping ErrLockTimeout), and returns at once where no writer
// holds it: beside a reader, or a writer opened without HoldTurnstile,
// both inside.
func TestAwaitTurnstileWaitsForAWriterThatHoldsIt(t *testing.T) {
	kd := makeDB(t, 1)
	const wait = 100 * time.Millisecond
	await := func() error {
		t.Helper()
		other := openKeyDir(t, kd.path) // another open file description
		defer other.dir.Close()
		return AwaitTurnstile(other.dir, wait)
	}

	r := mustOpenNoCheck(t, kd)
	if err := await(); err != nil {
		t.Errorf("AwaitTurnstile beside a reader: %v", err)
	}
	r.Close()
	w := mustOpen(t, kd, true)
	if err := await(); err != nil {
		t.Errorf("AwaitTurnstile beside a writer without HoldTurnstile: %v", err)
	}
	w.Close()

	// The dir the open borrowed closed before the DB, and kept open.
	for _, closeDir := range []bool{true, false} {
		borrowed := openKeyDir(t, kd.path)
		opts := testOpts
		opts.HoldTurnstile = true
		w, err := OpenWriter(borrowed.dir, kd.db, opts)
		if err != nil {
			t.Fatal(err)
		}
		if closeDir {
			borrowed.dir.Close()
		}
		err = await()
		var pe *os.PathError
		if !errors.Is(err, ErrLockTimeout) || !errors.As(err, &pe) || pe.Op != "flock" || pe.Path != kd.path {
			t.Errorf("dir closed %t: AwaitTurnstile under a writer holding it: %v, want a flock PathError of %s wrapping ErrLockTimeout", closeDir, err, kd.path)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if err := await(); err != nil {
			t.Errorf("dir closed %t: AwaitTurnstile once the writer closed: %v", closeDir, err)
		}
	}
}

// A writer's open with HoldTurnstile that fails lets the turnstile go, and
// a reader's ignores HoldTurnstile: neither leaves a look waiting.
func TestHoldTurnstileIsLetGoByAFailedOpenAndIgnoredByAReader(t *testing.T) {
	opts := testOpts
	opts.HoldTurnstile = true

	kd := newKeyDir(t)
	if err := os.Symlink(filepath.Join(t.TempDir(), "elsewhere"), kd.db); err != nil {
		t.Fatal(err)
	}
	if d, err := OpenWriter(kd.dir, kd.db, opts); err == nil {
		d.Close()
		t.Fatal("a writer's open of a symbolic link at meta.db succeeded")
	}
	if err := AwaitTurnstile(kd.dir, 100*time.Millisecond); err != nil {
		t.Errorf("AwaitTurnstile after a failed open with HoldTurnstile: %v", err)
	}

	kd = makeDB(t, 1)
	r, err := OpenReader(kd.dir, kd.db, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	other := openKeyDir(t, kd.path)
	if err := AwaitTurnstile(other.dir, 100*time.Millisecond); err != nil {
		t.Errorf("AwaitTurnstile beside a reader opened with HoldTurnstile: %v", err)
	}
}

// CloseFile lets meta.db's descriptor and flock go and keeps the key's
// locks: a writer opened with HoldTurnstile still holds the turnstile
// (AwaitTurnstile waits), another writer of the process still waits for
// the in-process lock, and the DB refuses work; Close then lets both go.
// No descriptor of the process leads to the file once CloseFile returns:
// where the file system keeps an unlinked file open under a hidden name
// (NFS, libfuse's), the key dir empties only then.
func TestCloseFileLetsTheFileGoAndKeepsTheKeysLocks(t *testing.T) {
	kd := makeDB(t, 1)
	borrowed := openKeyDir(t, kd.path)
	defer borrowed.dir.Close()
	opts := testOpts
	opts.HoldTurnstile = true
	w, err := OpenWriter(borrowed.dir, kd.db, opts)
	if err != nil {
		t.Fatal(err)
	}
	dev, ino, err := w.FileID()
	if err != nil {
		t.Fatal(err)
	}
	if err := w.CloseFile(); err != nil {
		t.Fatal(err)
	}

	if n, ok := testfs.DescriptorsOf(dev, ino); ok && n != 0 {
		t.Errorf("%d descriptors of the process lead to meta.db after CloseFile, want 0", n)
	} else if !ok {
		t.Log("no /proc/self/fd here: the descriptors are not counted")
	}
	f, err := os.OpenFile(filepath.Join(kd.path, FileName), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		t.Errorf("meta.db's flock after CloseFile: %v, want it free", err)
	}
	f.Close()
	other := openKeyDir(t, kd.path)
	defer other.dir.Close()
	if err := AwaitTurnstile(other.dir, 50*time.Millisecond); !errors.Is(err, ErrLockTimeout) {
		t.Errorf("AwaitTurnstile after CloseFile: %v, want it held (ErrLockTimeout)", err)
	}
	quick := testOpts
	quick.LockTimeout = 50 * time.Millisecond
	if w2, err := OpenWriter(other.dir, kd.db, quick); !errors.Is(err, ErrLockTimeout) {
		if w2 != nil {
			w2.Close()
		}
		t.Errorf("another writer's open after CloseFile: %v, want ErrLockTimeout (the in-process lock held)", err)
	}
	if err := w.Update(func(*Tx) error { return nil }); !errors.Is(err, ErrClosed) {
		t.Errorf("Update after CloseFile: %v, want ErrClosed", err)
	}

	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := AwaitTurnstile(other.dir, 50*time.Millisecond); err != nil {
		t.Errorf("AwaitTurnstile after Close: %v", err)
	}
	w2, err := OpenWriter(other.dir, kd.db, quick)
	if err != nil {
		t.Fatalf("a writer's open after Close: %v", err)
	}
	w2.Close()
}
