package db

import (
	"errors"
	"os"
	"reflect"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// OpenSidecars is the first step of every protocol that holds a key (the
// store's promotions, repairs, reaps and migrations): a writer's open makes
// a missing meta.db and may write, a reader's neither, and each hands back
// the sidecars the file holds.
func TestOpenSidecarsOpensAsAskedAndReadsTheSidecars(t *testing.T) {
	kd := newKeyDir(t)
	if _, _, err := OpenSidecars(kd.dir, testOpts, false); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("OpenSidecars(read) of a key dir without meta.db: %v, want ErrNotExist", err)
	}
	if _, err := os.Lstat(kd.db); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a reader's OpenSidecars made meta.db: %v", err)
	}

	w, sc, err := OpenSidecars(kd.dir, testOpts, true)
	if err != nil {
		t.Fatalf("OpenSidecars(write) of a key dir without meta.db: %v", err)
	}
	if !reflect.DeepEqual(sc, Sidecars{}) {
		t.Errorf("a new meta.db's sidecars: %+v, want none", sc)
	}
	want := Transcript{Gen: 3, Size: 77, CRC32C: 9, PromotedAt: 5e9}
	if err := w.Update(func(tx *Tx) error {
		return errors.Join(tx.PutTranscript(want), tx.PutVenue("local"))
	}); err != nil {
		t.Fatalf("Update through OpenSidecars(write): %v", err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	for _, write := range []bool{false, true} {
		d, sc, err := OpenSidecars(kd.dir, testOpts, write)
		if err != nil {
			t.Fatalf("OpenSidecars(write=%v): %v", write, err)
		}
		if sc.Transcript == nil || *sc.Transcript != want || sc.Venue == nil || *sc.Venue != "local" {
			t.Errorf("OpenSidecars(write=%v) read %+v (transcript %+v), want what was put", write, sc, sc.Transcript)
		}
		err = d.Update(func(*Tx) error { return nil })
		if write && err != nil {
			t.Errorf("Update of OpenSidecars(write=true): %v", err)
		}
		if !write && !errors.Is(err, ErrReadOnly) {
			t.Errorf("Update of OpenSidecars(write=false): %v, want ErrReadOnly", err)
		}
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// LockExclusive is check --repair's lock on a meta.db it opened itself (one
// no open accepts): exclusive, bounded by its timeout, the error a flock
// PathError that says it timed out, and held until the file is closed.
func TestLockExclusiveExcludesAndIsReleasedByClose(t *testing.T) {
	kd := makeDB(t, 1)
	open := func() *os.File {
		t.Helper()
		f, err := os.OpenFile(kd.db, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}

	r := mustOpenNoCheck(t, kd)
	f := open()
	start := time.Now()
	err := LockExclusive(kd.dir, f, 100*time.Millisecond)
	var pe *os.PathError
	if !errors.Is(err, ErrLockTimeout) || !errors.As(err, &pe) || pe.Op != "flock" || pe.Path != kd.db {
		t.Fatalf("LockExclusive under a reader: %v, want a flock PathError of %s wrapping ErrLockTimeout", err, kd.db)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("LockExclusive with a 100ms timeout took %v", took)
	}
	f.Close()
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}

	f = open()
	if err := LockExclusive(kd.dir, f, 100*time.Millisecond); err != nil {
		t.Fatalf("LockExclusive of a meta.db nobody holds: %v", err)
	}
	if d, err := OpenReader(kd.dir, kd.db, Options{LockTimeout: 100 * time.Millisecond}); !errors.Is(err, ErrLockTimeout) {
		if err == nil {
			d.Close()
		}
		t.Fatalf("a reader's open under LockExclusive: %v, want ErrLockTimeout", err)
	}
	f.Close()
	d, err := OpenReader(kd.dir, kd.db, Options{LockTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatalf("a reader's open once the locked file is closed: %v", err)
	}
	d.Close()
}

// mustOpenNoCheck opens a reader closed at the test's end, without the
// bbolt check mustOpen adds.
func mustOpenNoCheck(t *testing.T, kd keyDir) *DB {
	t.Helper()
	d, err := OpenReader(kd.dir, kd.db, testOpts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// CopiedFrom names the file a writer's open found hard-linked and copied
// (the store tells by it the file it judged from one made since), and
// nothing when the open copied nothing.
func TestCopiedFromNamesTheHardLinkedFileFound(t *testing.T) {
	kd := makeDB(t, 1)
	r := mustOpen(t, kd, false)
	if dev, ino, ok := r.CopiedFrom(); ok || dev != 0 || ino != 0 {
		t.Errorf("a reader's CopiedFrom = %d, %d, %v; want nothing", dev, ino, ok)
	}
	r.Close()

	hardLink(t, kd)
	was := lstat(t, kd.db)
	w := mustOpen(t, kd, true)
	dev, ino, ok := w.CopiedFrom()
	if !ok || dev != uint64(was.Dev) || ino != uint64(was.Ino) {
		t.Errorf("CopiedFrom after copying a hard-linked meta.db = %d, %d, %v; want %d, %d, true", dev, ino, ok, was.Dev, was.Ino)
	}
	fdev, fino, err := w.FileID()
	if err != nil {
		t.Fatal(err)
	}
	var now unix.Stat_t
	if err := unix.Lstat(kd.db, &now); err != nil {
		t.Fatal(err)
	}
	if fino == ino || fdev != uint64(now.Dev) || fino != uint64(now.Ino) {
		t.Errorf("FileID = %d, %d; want the copy at the name, %d, %d", fdev, fino, now.Dev, now.Ino)
	}
	w.Close()

	w = mustOpen(t, kd, true) // one name now: nothing to copy
	if dev, ino, ok := w.CopiedFrom(); ok || dev != 0 || ino != 0 {
		t.Errorf("CopiedFrom of a meta.db with one name = %d, %d, %v; want nothing", dev, ino, ok)
	}
}
