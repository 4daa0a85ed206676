package db

import (
	"crypto/sha256"
	"io"
	"os"
	"strings"
	"testing"
)

// A hard-linked meta.db that is mostly hole (a file extended past its
// pages, sparse: bbolt reads nothing past its high-water mark) is given a
// copy as sparse as itself: the copy has the file's size and bytes, and
// costs the disk what the file's data does, not its size. A copy that
// wrote the holes out wrote 64 MiB for this file of 12 KiB on
// disk; a 64 GiB one would fill most disks.
func TestAHardLinkedSparseMetaDBsCopyIsSparse(t *testing.T) {
	const size = 64 << 20
	kd := makeDB(t, 3)
	if err := os.Truncate(kd.db, size); err != nil {
		t.Fatal(err)
	}
	// Data past the pages, then more hole: every byte of it is kept.
	f, err := os.OpenFile(kd.db, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("past the pages"), size/2); err != nil {
		t.Fatal(err)
	}
	f.Close()
	hardLink(t, kd)
	was := lstat(t, kd.db)
	want := sha256File(t, kd.db)

	d := mustOpen(t, kd, true)
	if _, _, ok := d.CopiedFrom(); !ok {
		t.Fatal("the open gave the hard-linked meta.db no copy")
	}
	now := lstat(t, kd.db)
	if now.Size != size {
		t.Errorf("the copy is %d bytes, the file was %d", now.Size, size)
	}
	// The copy's own data: as much as the file's, give or take the file
	// system's allocation of the tail of an extent.
	if now.Blocks*512 > was.Blocks*512+1<<20 {
		t.Errorf("the copy of a file of %d bytes on disk takes %d bytes on disk", was.Blocks*512, now.Blocks*512)
	}
	if sha256File(t, kd.db) != want {
		t.Error("the copy's bytes differ from the file's")
	}
	if err := d.Update(func(tx *Tx) error { return tx.PutVenue("copied") }); err != nil {
		t.Fatal(err)
	}
	if v := venueOf(t, d); v != "copied" {
		t.Errorf("venue %q after the commit", v)
	}
}

func sha256File(t *testing.T, path string) [sha256.Size]byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	return [sha256.Size]byte(h.Sum(nil))
}

// A hard-linked meta.db cut short under the writer's lock, by a process
// that ignores it, while the open copies it: the open is refused as
// damage, and nothing is at the name but the file that was there.
func TestAHardLinkedMetaDBCutShortWhileCopiedIsDamage(t *testing.T) {
	kd := makeDB(t, 3)
	other := hardLink(t, kd)
	was := lstat(t, kd.db)
	testHookTempNames = func() {
		if err := os.Truncate(other, was.Size/2); err != nil {
			t.Error(err)
		}
	}
	defer func() { testHookTempNames = nil }()
	d, err := OpenWriter(kd.dir, kd.db, testOpts)
	if err == nil {
		d.Close()
	}
	wantErr(t, err, ErrDamaged)
	if now := lstat(t, kd.db); now.Ino != was.Ino {
		t.Errorf("meta.db is inode %d, the file cut short was %d", now.Ino, was.Ino)
	}
	if l := leftovers(t, kd); len(l) != 0 {
		t.Errorf("left in the key dir: %v", l)
	}
}

// A writer's open that refuses a hard-linked meta.db (a newer schema, a
// record or a page it refuses) refuses it before giving it a copy: the
// key dir is as it was, meta.db still the file its other name is. The
// copy renamed over meta.db first, the refused open cut the file from its
// backup and put another file at the key's name.
func TestARefusedHardLinkedMetaDBIsNotCopied(t *testing.T) {
	for name, c := range map[string]struct {
		spoil func(t *testing.T, kd keyDir)
		want  error
	}{
		"a newer schema":   {func(t *testing.T, kd keyDir) { setSchema(t, kd.db, SchemaVersion+1) }, ErrNewerSchema},
		"schema 0 in meta": {func(t *testing.T, kd keyDir) { setSchema(t, kd.db, 0) }, ErrDamaged},
		"cut short": {func(t *testing.T, kd keyDir) {
			m, err := inspect(t, kd.db)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(kd.db, m.HighWater()-int64(m.PageSize)); err != nil {
				t.Fatal(err)
			}
		}, ErrDamaged},
	} {
		t.Run(strings.ReplaceAll(name, " ", "_"), func(t *testing.T) {
			kd := makeDB(t, 2)
			c.spoil(t, kd)
			other := hardLink(t, kd)
			before := dirState(t, kd)
			was := lstat(t, kd.db)
			d, err := OpenWriter(kd.dir, kd.db, testOpts)
			if err == nil {
				d.Close()
			}
			wantErr(t, err, c.want)
			if after := dirState(t, kd); after != before {
				t.Errorf("the refused open changed the key dir:\nbefore %s\nafter  %s", before, after)
			}
			if now, o := lstat(t, kd.db), lstat(t, other); now.Ino != was.Ino || o.Ino != was.Ino {
				t.Errorf("meta.db is inode %d, its other name %d; both were %d", now.Ino, o.Ino, was.Ino)
			}
		})
	}
}
