package db

import (
	"os"
	"reflect"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// A meta page's header flags (bytes no checksum covers and no open
// reads, as its id) not a meta page's: Check walks the commit in use and
// finds nothing, whichever page it is.
func TestCheckTakesAMetaPagesHeaderFlagsForNoDamage(t *testing.T) {
	for _, which := range []string{"spare", "newest"} {
		t.Run(which, func(t *testing.T) {
			kd := makeDB(t, 3)
			file := readFile(t, kd.db)
			m, err := InspectMeta(memPages(file), int64(len(file)))
			if err != nil {
				t.Fatal(err)
			}
			i := m.Active
			if which == "spare" {
				i = 1 - m.Active
			}
			file[m.Pages[i].Offset+8] ^= 0x0c // the header's flags: 0x08, no page type
			if err := os.WriteFile(kd.db, file, 0o600); err != nil {
				t.Fatal(err)
			}
			r, err := OpenReader(kd.dir, kd.db, testOpts)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if problems, err := r.Check(100); err != nil || len(problems) != 0 {
				t.Fatalf("Check = %q, %v; want nothing", problems, err)
			}
		})
	}
}

// A nested bucket in history/ (no entry: only damage or a hostile process
// puts one there) is removed whole by DropUndecodableHistory, the entries
// that decode kept.
func TestDropUndecodableHistoryRemovesANestedBucket(t *testing.T) {
	kd := makeDB(t, 3)
	r := mustOpen(t, kd, false)
	var before []HistoryEntry
	if err := r.View(func(tx *Tx) (err error) { before, err = tx.History(0); return err }); err != nil {
		t.Fatal(err)
	}
	r.Close()
	bdb, err := bolt.Open(kd.db, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = bdb.Update(func(tx *bolt.Tx) error {
		b, err := tx.Bucket([]byte(bucketHistory)).CreateBucket([]byte("nested"))
		if err == nil {
			err = b.Put([]byte("k"), []byte("v"))
		}
		return err
	})
	if cerr := bdb.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	opts := testOpts
	opts.UndecodableHistory = true
	w, err := OpenWriter(kd.dir, kd.db, opts)
	if err != nil {
		t.Fatal(err)
	}
	var dropped []string
	err = w.Update(func(tx *Tx) (err error) { dropped, err = tx.DropUndecodableHistory(); return err })
	w.Close()
	if err != nil {
		t.Fatalf("the drop of a nested bucket: %v", err)
	}
	if want := []string{keyHex([]byte("nested")) + " (a bucket)"}; !reflect.DeepEqual(dropped, want) {
		t.Fatalf("dropped %q; want %q", dropped, want)
	}
	r = mustOpen(t, kd, false)
	defer r.Close()
	var after []HistoryEntry
	if err := r.View(func(tx *Tx) (err error) { after, err = tx.History(0); return err }); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(after, before) {
		t.Fatalf("history after the drop %+v; want %+v", after, before)
	}
}
