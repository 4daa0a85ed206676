package db

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
)

// fdCount is how many descriptors the process holds open.
func fdCount(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	return len(ents) - 1 // ReadDir's own
}

// A writer's open of a hard-linked meta.db leaves no descriptor behind
// once closed: the listing of the key dir for create's leftover names
// (tempNamesOf) included. A process that opens keys for ever (a
// long-running worker) would run out of descriptors.
func TestAHardLinkedOpenLeavesNoDescriptorOpen(t *testing.T) {
	kd := makeDB(t, 1)
	hardLink(t, kd)
	// No collection meanwhile: the finalizer of a leaked *os.File would
	// close it and hide the leak.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	before := fdCount(t)
	d, err := OpenWriter(kd.dir, kd.db, testOpts)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, ok := d.CopiedFrom(); !ok {
		t.Fatal("the writer copied nothing")
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if after := fdCount(t); after != before {
		t.Errorf("%d descriptors open after the writer's open and close, %d before", after, before)
	}
}

// A copy that cannot be put at meta.db's name fails the writer's open:
// a writer that went on would commit into a file no name leads to, and
// every acknowledged commit would be lost. The name and the other name's
// file are as they were. (The temp is taken away here from the
// BeforeWrite call just before the rename, as a sweep of temps might.)
func TestACopyThatCannotBePutAtTheNameFailsTheOpen(t *testing.T) {
	kd := makeDB(t, 1)
	backup := hardLink(t, kd)
	was, wasIno := readFile(t, kd.db), lstat(t, kd.db).Ino
	opts := testOpts
	opts.BeforeWrite = func() error {
		names, err := filepath.Glob(filepath.Join(kd.path, TempPrefix+"*"))
		if err != nil || len(names) != 1 {
			return fmt.Errorf("want one temp, found %q (%v)", names, err)
		}
		return os.Remove(names[0])
	}
	d, err := OpenWriter(kd.dir, kd.db, opts)
	if err == nil {
		d.Update(func(tx *Tx) error { return tx.PutVenue("lost") })
		d.Close()
		t.Fatalf("the open went on with a copy that is not at the name; meta.db's venue is now %q", venueOf(t, mustOpen(t, kd, false)))
	}
	if !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "rename") {
		t.Errorf("open: %v, want the rename's ENOENT", err)
	}
	if now := lstat(t, kd.db); now.Ino != wasIno || now.Nlink != 2 || !bytes.Equal(readFile(t, kd.db), was) || !bytes.Equal(readFile(t, backup), was) {
		t.Errorf("meta.db changed: inode %d (was %d), %d names", now.Ino, wasIno, now.Nlink)
	}
	if names := leftovers(t, kd); len(names) != 0 {
		t.Errorf("left in the key dir: %v", names)
	}
}

// The copy keeps the owner and the group whichever of the two differs
// from the writer's: root's check --repair on a worker's key whose file is
// in root's group (or the reverse) must not leave the copy root's.
func TestAHardLinkedMetaDBsCopyKeepsAnOwnerOrGroupAlone(t *testing.T) {
	if os.Geteuid() != 0 || os.Getegid() != 0 {
		t.Skip("needs root to give meta.db another owner")
	}
	for _, c := range []struct{ uid, gid uint32 }{{4242, 0}, {0, 4343}} {
		t.Run(fmt.Sprintf("%d:%d", c.uid, c.gid), func(t *testing.T) {
			kd := makeDB(t, 0)
			if err := os.Chown(kd.db, int(c.uid), int(c.gid)); err != nil {
				t.Fatal(err)
			}
			backup := hardLink(t, kd)
			putVenue(t, kd, "elsewhere")
			live := lstat(t, kd.db)
			if live.Ino == lstat(t, backup).Ino {
				t.Fatal("meta.db was not copied")
			}
			if live.Uid != c.uid || live.Gid != c.gid {
				t.Errorf("meta.db's copy is owned by %d:%d, want the old file's %d:%d", live.Uid, live.Gid, c.uid, c.gid)
			}
		})
	}
}
