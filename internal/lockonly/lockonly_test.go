package lockonly_test

import (
	"os"
	"path/filepath"
	"testing"

	"sessdb/db"
	"sessdb/internal/lockonly"
)

// open opens dir's meta.db for writing, as a migration does, and returns
// it with its sidecars; the test closes it.
func open(t *testing.T, kd *os.File) (*db.DB, db.Sidecars) {
	t.Helper()
	d, sc, err := db.OpenSidecars(kd, db.Options{}, true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d, sc
}

func keyDir(t *testing.T) *os.File {
	t.Helper()
	kd, err := os.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { kd.Close() })
	return kd
}

// commit writes fn's change into kd's meta.db and closes it, as a rival
// would between another open's look and its lock.
func commit(t *testing.T, kd *os.File, fn func(*db.Tx) error) {
	t.Helper()
	d, err := db.OpenWriter(kd, filepath.Join(kd.Name(), db.FileName), db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.Update(fn); err != nil {
		t.Fatal(err)
	}
}

func TestMadeByOpen(t *testing.T) {
	t.Run("none found, the open made an empty one", func(t *testing.T) {
		kd := keyDir(t)
		before := lockonly.Look(kd)
		d, sc := open(t, kd)
		if !before.MadeByOpen(kd, d, sc) {
			t.Fatal("an empty meta.db this open made is not its own")
		}
	})
	t.Run("none found, a rival's history in it by the lock", func(t *testing.T) {
		kd := keyDir(t)
		before := lockonly.Look(kd)
		commit(t, kd, func(tx *db.Tx) error {
			_, err := tx.AppendHistory(db.HistoryEntry{Gen: 1, At: 1, Outcome: "superseded"})
			return err
		})
		d, sc := open(t, kd)
		if before.MadeByOpen(kd, d, sc) {
			t.Fatal("a meta.db holding a rival's refusal is taken for the open's own")
		}
	})
	t.Run("none found, a rival's record in it by the lock", func(t *testing.T) {
		kd := keyDir(t)
		before := lockonly.Look(kd)
		commit(t, kd, func(tx *db.Tx) error { return tx.PutVenue("local") })
		d, sc := open(t, kd)
		if before.MadeByOpen(kd, d, sc) {
			t.Fatal("a meta.db holding a stamp is taken for the open's own")
		}
	})
	t.Run("the empty one found is the one opened", func(t *testing.T) {
		kd := keyDir(t)
		commit(t, kd, func(*db.Tx) error { return nil })
		before := lockonly.Look(kd)
		d, sc := open(t, kd)
		if before.MadeByOpen(kd, d, sc) {
			t.Fatal("a meta.db found before the open is taken for the open's own")
		}
	})
	t.Run("the empty one found had a second name, and the open copied it", func(t *testing.T) {
		kd := keyDir(t)
		commit(t, kd, func(*db.Tx) error { return nil })
		if err := os.Link(filepath.Join(kd.Name(), db.FileName), filepath.Join(t.TempDir(), db.FileName)); err != nil {
			t.Fatal(err)
		}
		before := lockonly.Look(kd)
		d, sc := open(t, kd)
		if _, _, ok := d.CopiedFrom(); !ok {
			t.Fatal("the writer's open of a hard-linked meta.db copied nothing")
		}
		if before.MadeByOpen(kd, d, sc) {
			t.Fatal("a meta.db found before the open, given a file of its own by it, is taken for the open's own")
		}
	})
	t.Run("the empty one found is the one opened, changed since", func(t *testing.T) {
		// A schema migration, a roll forward's commit or a chmod changes
		// the file's change time: the inode held still tells it.
		kd := keyDir(t)
		commit(t, kd, func(*db.Tx) error { return nil })
		before := lockonly.Look(kd)
		defer before.Close()
		if err := os.Chmod(filepath.Join(kd.Name(), db.FileName), 0o640); err != nil {
			t.Fatal(err)
		}
		d, sc := open(t, kd)
		if before.MadeByOpen(kd, d, sc) {
			t.Fatal("a meta.db found before the open, its change time moved since, is taken for the open's own")
		}
	})
	t.Run("the one found was replaced by one with a second name, which the open copied", func(t *testing.T) {
		kd := keyDir(t)
		commit(t, kd, func(*db.Tx) error { return nil })
		before := lockonly.Look(kd)
		defer before.Close()
		if err := os.Remove(filepath.Join(kd.Name(), db.FileName)); err != nil {
			t.Fatal(err)
		}
		commit(t, kd, func(*db.Tx) error { return nil })
		if err := os.Link(filepath.Join(kd.Name(), db.FileName), filepath.Join(t.TempDir(), db.FileName)); err != nil {
			t.Fatal(err)
		}
		d, _ := open(t, kd)
		if _, _, ok := d.CopiedFrom(); !ok {
			t.Fatal("the writer's open of a hard-linked meta.db copied nothing")
		}
		if before.Is(kd, d) {
			t.Fatal("the copy of a file put at the name since the look is taken for the file found")
		}
	})
	t.Run("the one found was removed and the open made another", func(t *testing.T) {
		kd := keyDir(t)
		commit(t, kd, func(*db.Tx) error { return nil })
		before := lockonly.Look(kd)
		if err := os.Remove(filepath.Join(kd.Name(), db.FileName)); err != nil {
			t.Fatal(err)
		}
		d, sc := open(t, kd)
		if !before.MadeByOpen(kd, d, sc) {
			t.Fatal("an empty meta.db made after the one found was removed is not the open's own")
		}
	})
}

// Close lets go of the meta.db Look held: one descriptor a key, which a
// migration of a large root would otherwise run out of.
func TestCloseLetsGoOfTheFileHeld(t *testing.T) {
	kd := keyDir(t)
	commit(t, kd, func(*db.Tx) error { return nil })
	fds := func() int {
		es, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Skip("no /proc/self/fd:", err)
		}
		return len(es)
	}
	n := fds()
	before := lockonly.Look(kd)
	if got := fds(); got != n+1 {
		t.Fatalf("%d descriptors open after the look, %d before; want the meta.db held", got, n)
	}
	before.Close()
	if got := fds(); got != n {
		t.Fatalf("%d descriptors open after Close, %d before the look", got, n)
	}
}
