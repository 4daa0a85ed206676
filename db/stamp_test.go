package db

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// A process that ignores the lock can write meta.db while an open or a
// read holds it (a cp of a backup over the live file). bbolt's pages
// carry no checksum, so what was read then may be half the old file and
// half the new: a read that the file was written under is refused as
// damage, never taken for the file's.

// venueWrittenUnderTheLock returns a hook that writes another venue over
// the one promoteLike stamped, in place: the file keeps its size and every
// page its shape, so nothing but the write itself tells.
func venueWrittenUnderTheLock(t *testing.T, path string) func() {
	t.Helper()
	off := bytes.LastIndex(readFile(t, path), []byte("podman"))
	if off < 0 {
		t.Fatal("no venue in the file")
	}
	return func() { writeAt(t, path, int64(off), []byte("dockeR")) }
}

func TestAnOpenThatTheFileIsWrittenUnderIsRefused(t *testing.T) {
	for _, large := range []bool{false, true} {
		for _, write := range []bool{false, true} {
			name := map[bool]string{false: "snapshot", true: "mapped"}[large] + "/" + map[bool]string{false: "reader", true: "writer"}[write]
			t.Run(name, func(t *testing.T) {
				kd := smallOrBigDB(t, large)
				testHookReading = venueWrittenUnderTheLock(t, kd.db)
				defer func() { testHookReading = nil }()
				open := OpenReader
				if write {
					open = OpenWriter
				}
				d, err := open(kd.dir, kd.db, testOpts)
				if err == nil {
					venue := readVenue(t, d)
					d.Close()
					t.Fatalf("opened a file written while its pages were read; the venue reads %q", venue)
				}
				wantErr(t, err, ErrDamaged)
				if !strings.Contains(err.Error(), "written under the lock") {
					t.Errorf("%v; want the write under the lock named", err)
				}
			})
		}
	}
}

// A large file is handed to bbolt after its pre-check, and read by the
// reader's open itself (its schema): a write in between refuses the open.
func TestAnOpenThatTheFileIsWrittenUnderAfterItsPrecheckIsRefused(t *testing.T) {
	kd := bigDB(t)
	testHookPrechecked = venueWrittenUnderTheLock(t, kd.db)
	defer func() { testHookPrechecked = nil }()
	d, err := OpenReader(kd.dir, kd.db, testOpts)
	if err == nil {
		d.Close()
	}
	wantErr(t, err, ErrDamaged)
}

// A large file is read through bbolt's mapping after the open, each read
// as it goes: a write between the open and a read is refused at the read.
func TestAReadThatTheFileIsWrittenUnderIsRefused(t *testing.T) {
	kd := bigDB(t)
	write := venueWrittenUnderTheLock(t, kd.db)
	d, err := OpenReader(kd.dir, kd.db, testOpts)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if venue := readVenue(t, d); venue != "podman" {
		t.Fatalf("the venue before the write: %q", venue)
	}
	write()
	err = d.View(func(tx *Tx) error { _, err := tx.Sidecars(); return err })
	wantErr(t, err, ErrDamaged)

	// Check reads the pages again, as they are now: a write while it
	// reads them is refused too.
	testHookReading = write
	defer func() { testHookReading = nil }()
	problems, err := d.Check(10)
	if err == nil {
		t.Fatalf("Check of a file written while it read it: no error, problems %q", problems)
	}
	wantErr(t, err, ErrDamaged)
}

// A writer's own commits are not a write under its lock: its reads after
// them stand.
func TestAWritersReadsAfterItsCommitsStand(t *testing.T) {
	for _, large := range []bool{false, true} {
		kd := smallOrBigDB(t, large)
		d, err := OpenWriter(kd.dir, kd.db, testOpts)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := promoteLike(d, "one more"); err != nil {
			t.Fatal(err)
		}
		if err := d.View(func(tx *Tx) error { _, err := tx.History(0); return err }); err != nil {
			t.Errorf("large %v: a writer's read after its commit: %v", large, err)
		}
		if _, err := d.Check(10); err != nil {
			t.Errorf("large %v: a writer's Check after its commit: %v", large, err)
		}
		d.Close()
	}
}

// smallOrBigDB is a meta.db read as a snapshot (one promotion) or through
// bbolt's mapping (bigDB), its venue "podman".
func smallOrBigDB(t *testing.T, large bool) keyDir {
	t.Helper()
	if large {
		return bigDB(t)
	}
	kd := newKeyDir(t)
	d, err := OpenWriter(kd.dir, kd.db, testOpts)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := promoteLike(d, "job"); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	return kd
}

func readVenue(t *testing.T, d *DB) string {
	t.Helper()
	var s Sidecars
	if err := d.View(func(tx *Tx) (err error) { s, err = tx.Sidecars(); return err }); err != nil {
		t.Fatal(err)
	}
	if s.Venue == nil {
		return ""
	}
	return *s.Venue
}

// A file system whose clock is coarser than the time between two writes
// shows the second with the first's modification time: there the size
// alone tells a write under the lock (fileStamp). Here the venue is
// written over and the file grown a page while the open reads it, and
// its modification time set back to the stamp's: the open is refused all
// the same, on the snapshot and the mapped path.
func TestAWriteUnderTheLockThatLeavesTheModificationTimeIsToldByTheSize(t *testing.T) {
	for _, large := range []bool{false, true} {
		kd := smallOrBigDB(t, large)
		write := venueWrittenUnderTheLock(t, kd.db)
		testHookReading = func() {
			var was unix.Stat_t
			if err := unix.Stat(kd.db, &was); err != nil {
				t.Fatal(err)
			}
			write()
			f, err := os.OpenFile(kd.db, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			_, err = f.Write(make([]byte, 4096))
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err == nil {
				err = unix.UtimesNano(kd.db, []unix.Timespec{was.Atim, was.Mtim})
			}
			if err != nil {
				t.Fatal(err)
			}
			var now unix.Stat_t
			if err := unix.Stat(kd.db, &now); err != nil || now.Mtim != was.Mtim || now.Size == was.Size {
				t.Fatalf("the write left the time %v (was %v) and the size %d (was %d), %v: not the write this test makes", now.Mtim, was.Mtim, now.Size, was.Size, err)
			}
		}
		d, err := OpenReader(kd.dir, kd.db, testOpts)
		testHookReading = nil
		if err == nil {
			venue := readVenue(t, d)
			d.Close()
			t.Fatalf("large %v: opened a file grown while its pages were read, its time kept; the venue reads %q", large, venue)
		}
		wantErr(t, err, ErrDamaged)
	}
}

// The stamp's check after a mapped reader's schema check does not stand
// in for that check's own answer: a file of a newer schema is refused as
// one (ErrNewerSchema), not opened because no process wrote it meanwhile.
func TestAMappedReaderOfANewerSchemaIsRefusedThoughTheFileStoodStill(t *testing.T) {
	kd := bigDB(t)
	setSchema(t, kd.db, SchemaVersion+1)
	d, err := OpenReader(kd.dir, kd.db, testOpts)
	if err == nil {
		d.Close()
		t.Fatal("a reader opened a file of a newer schema")
	}
	wantErr(t, err, ErrNewerSchema)
}
