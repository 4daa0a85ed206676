package db

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"sessdb/internal/faults"
	"sessdb/internal/testfs"
)

// hardLink gives kd's meta.db a second name outside the key dir, as a copy
// of the root made with cp -al would, and returns that name.
func hardLink(t *testing.T, kd keyDir) string {
	t.Helper()
	other := filepath.Join(t.TempDir(), "backup-"+FileName)
	if err := os.Link(kd.db, other); err != nil {
		t.Fatal(err)
	}
	return other
}

func lstat(t *testing.T, path string) unix.Stat_t {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		t.Fatal(err)
	}
	return st
}

func venueOf(t *testing.T, d *DB) string {
	t.Helper()
	var venue string
	err := d.View(func(tx *Tx) error {
		sc, err := tx.Sidecars()
		if err == nil && sc.Venue != nil {
			venue = *sc.Venue
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return venue
}

func putVenue(t *testing.T, kd keyDir, venue string) {
	t.Helper()
	d, err := OpenWriter(kd.dir, kd.db, testOpts)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.Update(func(tx *Tx) error { return tx.PutVenue(venue) }); err != nil {
		t.Fatal(err)
	}
}

// leftovers lists the key dir's names other than meta.db.
func leftovers(t *testing.T, kd keyDir) []string {
	t.Helper()
	ents, err := os.ReadDir(kd.path)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		if e.Name() != FileName {
			names = append(names, e.Name())
		}
	}
	return names
}

// A writer never writes a meta.db through another of its names: a backup
// made with hard links keeps the file it had, byte for byte, and the key
// goes on in a file of its own, with the old one's permission bits.
func TestWriterGivesAHardLinkedMetaDBAFileOfItsOwn(t *testing.T) {
	kd := makeDB(t, 3)
	if err := os.Chmod(kd.db, 0o640); err != nil {
		t.Fatal(err)
	}
	backup := hardLink(t, kd)
	was := readFile(t, backup)

	putVenue(t, kd, "elsewhere")

	if !bytes.Equal(readFile(t, backup), was) {
		t.Fatal("the other name's file changed with the writer's commit")
	}
	live, other := lstat(t, kd.db), lstat(t, backup)
	if live.Ino == other.Ino || live.Nlink != 1 || other.Nlink != 1 {
		t.Fatalf("meta.db inode %d (%d names), the backup's %d (%d names): want two files of one name each",
			live.Ino, live.Nlink, other.Ino, other.Nlink)
	}
	if perm := live.Mode & 0o777; perm != 0o640 {
		t.Errorf("meta.db's copy has mode %#o, want the old file's 0640", perm)
	}
	if names := leftovers(t, kd); len(names) != 0 {
		t.Errorf("left in the key dir: %v", names)
	}
	if got := venueOf(t, mustOpen(t, kd, false)); got != "elsewhere" {
		t.Errorf("meta.db's venue %q, want the commit's", got)
	}
	// The backup is still a whole meta.db, with what it held.
	bk := openKeyDir(t, filepath.Dir(backup))
	if err := os.Rename(backup, filepath.Join(bk.path, FileName)); err != nil {
		t.Fatal(err)
	}
	if got := venueOf(t, mustOpen(t, bk, false)); got != "local" {
		t.Errorf("the backup's venue %q, want its own %q", got, "local")
	}
}

// A reader writes nothing, so it has no reason to copy: the file keeps its
// names.
func TestReaderLeavesAHardLinkedMetaDBAlone(t *testing.T) {
	kd := makeDB(t, 0)
	backup := hardLink(t, kd)
	mustOpen(t, kd, false).Close()
	if live := lstat(t, kd.db); live.Ino != lstat(t, backup).Ino || live.Nlink != 2 {
		t.Fatalf("a reader's open changed meta.db's names: %d names", live.Nlink)
	}
	if names := leftovers(t, kd); len(names) != 0 {
		t.Errorf("left in the key dir: %v", names)
	}
}

// A copy that fails before its rename, or a key dir found moved aside at
// the last moment, leaves meta.db the file it was, with both its names,
// and no temp: the open fails with the cause, and the next one copies.
func TestAHardLinkedMetaDBsFailedCopyChangesNothing(t *testing.T) {
	injected := errors.New("injected at the copy's rename")
	moved := errors.New("the key dir was moved aside")
	for _, tc := range []struct {
		name   string
		fault  error
		before error
		want   error
	}{
		{"fault before the rename", injected, nil, injected},
		{"moved aside before the rename", nil, moved, moved},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kd := makeDB(t, 0)
			backup := hardLink(t, kd)
			was := dirState(t, kd)
			reached := 0
			faults.Set(func(p faults.Point) error {
				if p != faults.DBOwnFileBeforeRename {
					return nil
				}
				reached++
				return tc.fault
			})
			defer faults.Set(nil)
			opts := testOpts
			// ensureExists asks too, but only when meta.db is absent.
			opts.BeforeWrite = func() error { return tc.before }
			_, err := OpenWriter(kd.dir, kd.db, opts)
			wantErr(t, err, tc.want)
			if reached != 1 {
				t.Fatalf("the copy's rename reached %d times, want 1", reached)
			}
			if now := dirState(t, kd); now != was {
				t.Errorf("the key dir changed:\n%s\nwant:\n%s", now, was)
			}
			if live := lstat(t, kd.db); live.Ino != lstat(t, backup).Ino || live.Nlink != 2 {
				t.Errorf("meta.db is no longer the linked file")
			}
			faults.Set(nil)
			putVenue(t, kd, "elsewhere")
			if live := lstat(t, kd.db); live.Ino == lstat(t, backup).Ino {
				t.Error("the next writer wrote the linked file")
			}
		})
	}
}

const keyDirEnv = "SESSDB_DB_TEST_KEYDIR"

// An open that got meta.db's descriptor before another process gave the
// file a copy of its own gets the old file's lock afterwards, on a file
// no longer at the name: it opens the name again and reads the copy,
// where the other process's commit is.
func TestAnOpenWaitingOnAHardLinkedMetaDBReadsItsCopy(t *testing.T) {
	if os.Getenv(childEnv) == t.Name() {
		putVenue(t, openKeyDir(t, os.Getenv(keyDirEnv)), "elsewhere")
		return
	}
	kd := makeDB(t, 0)
	hardLink(t, kd)
	opened := 0
	faults.Set(func(p faults.Point) error {
		if p != faults.DBOpenBeforeLock {
			return nil
		}
		if opened++; opened == 1 {
			if out, err := runChild(t, []string{keyDirEnv + "=" + kd.path}, nil); err != nil {
				t.Errorf("writer in a child: %v\n%s", err, out)
			}
		}
		return nil
	})
	defer faults.Set(nil)
	d := mustOpen(t, kd, false)
	faults.Set(nil)
	if opened != 2 {
		t.Errorf("meta.db opened %d times, want 2 (the linked file, then its copy)", opened)
	}
	if got := venueOf(t, d); got != "elsewhere" {
		t.Errorf("venue %q, want the child's commit", got)
	}
	if lst := lstat(t, kd.db); lst.Nlink != 1 {
		t.Errorf("meta.db has %d names after the child's write", lst.Nlink)
	}
	if names := leftovers(t, kd); len(names) != 0 {
		t.Errorf("left in the key dir: %v", names)
	}
}

// A second name that is a meta.db temp in the key dir is create's, left by
// a crash between its link and its unlink: check --repair removes it, and
// the writer does not copy for it. One name elsewhere beside it still
// makes a copy.
func TestACreateLeftoverIsNoReasonToCopy(t *testing.T) {
	kd := makeDB(t, 0)
	leftover := filepath.Join(kd.path, TempPrefix+"00000000000000aa")
	if err := os.Link(kd.db, leftover); err != nil {
		t.Fatal(err)
	}
	putVenue(t, kd, "elsewhere")
	if live := lstat(t, kd.db); live.Ino != lstat(t, leftover).Ino || live.Nlink != 2 {
		t.Fatalf("meta.db copied for its own temp: %d names", live.Nlink)
	}

	backup := hardLink(t, kd)
	putVenue(t, kd, "again")
	live := lstat(t, kd.db)
	if live.Ino == lstat(t, backup).Ino || live.Nlink != 1 {
		t.Fatalf("meta.db with a name outside the key dir beside its temp was written in place: %d names", live.Nlink)
	}
	if lstat(t, leftover).Ino != lstat(t, backup).Ino {
		t.Error("the temp no longer names the old file")
	}
}

// A writer that gives a hard-linked meta.db a file of its own lets go of
// the old file's flock though a child forked while it held it keeps a
// copy of the descriptor until it execs: an open waiting on the old file,
// or one made through its other name (the backup), is not kept out by a
// writer that no longer uses it. The copy is made by hand once the old
// file's flock is had, where a fork's would be.
func TestAWriterLetsGoOfAHardLinkedMetaDBsFlockThoughACopyOfItsDescriptorLives(t *testing.T) {
	kd := makeDB(t, 1)
	other := hardLink(t, kd)
	testHookLocked = func() {
		copied, ok, err := testfs.DupDescriptorOf(kd.db)
		if !ok {
			t.Skip("no /proc/self/fd to find the open's descriptor in")
		}
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unix.Close(copied) })
	}
	d, err := OpenWriter(kd.dir, kd.db, testOpts)
	testHookLocked = nil
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if a, b := lstat(t, kd.db), lstat(t, other); a.Ino == b.Ino {
		t.Fatal("the writer kept the hard-linked file; want a file of its own")
	}
	old, err := os.Open(other)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	if err := unix.Flock(int(old.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		t.Errorf("a flock of the old file, the writer on its own copy: %v; want it had", err)
	}
}
