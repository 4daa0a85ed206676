package db

import (
	"errors"
	"reflect"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// putRaw writes value at bucket/key through bbolt, as damage or a hostile
// process would, past every check of this package.
func putRaw(t *testing.T, path, bucket string, key, value []byte) {
	t.Helper()
	bdb, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = bdb.Update(func(tx *bolt.Tx) error { return tx.Bucket([]byte(bucket)).Put(key, value) })
	if cerr := bdb.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
}

// A writer's open refuses a file whose history holds an entry that does
// not decode, as a reader does, unless asked for the drop: then it opens,
// DropUndecodableHistory removes the entries that do not decode (and only
// them), and the file it commits is one a reader takes. Other damage is
// refused whatever the option.
func TestAWriterOpensAnUndecodableHistoryOnlyToDropIt(t *testing.T) {
	for _, tc := range []struct {
		name   string
		makeDB func(testing.TB) keyDir
	}{
		{"small", func(t testing.TB) keyDir { return makeDB(t, 3) }},
		// Verified through bbolt at the writer's open, not from a
		// snapshot (bigDB makes sure of it).
		{"over the snapshot limit", bigDB},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kd := tc.makeDB(t)
			r := mustOpen(t, kd, false)
			var before []HistoryEntry
			if err := r.View(func(tx *Tx) (err error) { before, err = tx.History(0); return err }); err != nil {
				t.Fatal(err)
			}
			r.Close()
			putRaw(t, kd.db, bucketHistory, historyKey(before[1].Seq), []byte("not msgpack"))
			putRaw(t, kd.db, bucketHistory, []byte("abc"), []byte{0x80})
			// A nested bucket, which only damage or a hostile process makes there.
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

			if _, err := OpenWriter(kd.dir, kd.db, testOpts); !errors.Is(err, ErrDamaged) {
				t.Fatalf("a writer's open without the option = %v; want ErrDamaged", err)
			}
			opts := testOpts
			opts.UndecodableHistory = true
			w, err := OpenWriter(kd.dir, kd.db, opts)
			if err != nil {
				t.Fatal(err)
			}
			var dropped []string
			if err := w.Update(func(tx *Tx) (err error) { dropped, err = tx.DropUndecodableHistory(); return err }); err != nil {
				t.Fatal(err)
			}
			w.Close()
			if want := []string{keyHex(historyKey(before[1].Seq)) + " (11 bytes)", keyHex([]byte("abc")) + " (1 bytes)", keyHex([]byte("nested")) + " (a bucket)"}; !reflect.DeepEqual(dropped, want) {
				t.Fatalf("dropped %q; want %q", dropped, want)
			}
			r = mustOpen(t, kd, false)
			defer r.Close()
			var after []HistoryEntry
			if err := r.View(func(tx *Tx) (err error) { after, err = tx.History(0); return err }); err != nil {
				t.Fatal(err)
			}
			if want := append([]HistoryEntry{before[0]}, before[2:]...); !reflect.DeepEqual(after, want) {
				t.Fatalf("history after the drop %+v; want %+v", after, want)
			}
			r.Close()

			putRaw(t, kd.db, bucketSidecars, []byte("venue"), []byte{0xc1})
			if _, err := OpenWriter(kd.dir, kd.db, opts); !errors.Is(err, ErrDamaged) {
				t.Fatalf("a writer's open with the option of a damaged sidecar = %v; want ErrDamaged", err)
			}
		})
	}
}
