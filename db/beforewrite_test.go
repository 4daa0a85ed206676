package db

import (
	"errors"
	"io/fs"
	"os"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// Options.BeforeWrite stops a writer's open before it writes anything of
// its own: the link of a meta.db it made (none is left, not even a temp)
// and the commit of a schema migration (the file is left byte for byte),
// and its error comes back as it is. A reader never calls it, nor a writer
// of a current file it did not make.
func TestBeforeWriteStopsTheOpenBeforeItWrites(t *testing.T) {
	moved := errors.New("moved aside")
	refuse := func(calls *int) Options {
		o := testOpts
		o.BeforeWrite = func() error { *calls++; return moved }
		return o
	}

	t.Run("create", func(t *testing.T) {
		kd := newKeyDir(t)
		var calls int
		d, err := OpenWriter(kd.dir, kd.db, refuse(&calls))
		if err == nil {
			d.Close()
		}
		if err != moved || calls != 1 {
			t.Fatalf("open = %v after %d calls; want the hook's own error after 1", err, calls)
		}
		// Refused at the link, after the temp was made: it goes too.
		o := testOpts
		calls = 0
		o.BeforeWrite = func() error {
			if calls++; calls == 2 {
				return moved
			}
			return nil
		}
		if d, err := OpenWriter(kd.dir, kd.db, o); err != moved || calls != 2 {
			if err == nil {
				d.Close()
			}
			t.Fatalf("open = %v after %d calls; want the hook's own error at the link", err, calls)
		}
		if names, _ := kd.dir.Readdirnames(-1); len(names) != 0 {
			t.Fatalf("left in the key dir: %v", names)
		}
	})

	t.Run("schema migration", func(t *testing.T) {
		kd := newKeyDir(t)
		mustOpen(t, kd, true).Close()
		bdb, err := bolt.Open(kd.db, 0o600, nil)
		if err != nil {
			t.Fatal(err)
		}
		err = bdb.Update(func(tx *bolt.Tx) error { return tx.Bucket([]byte(bucketMeta)).Put([]byte(keySchema), encodeUint(1)) })
		if cerr := bdb.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			t.Fatal(err)
		}
		before, err := os.ReadFile(kd.db)
		if err != nil {
			t.Fatal(err)
		}
		var calls int
		// The open leaves an older schema as it is (its first write
		// migrates it): no call, nothing written.
		d, err := OpenWriter(kd.dir, kd.db, refuse(&calls))
		if err != nil || calls != 0 {
			t.Fatalf("open = %v after %d calls; want it open, no call", err, calls)
		}
		err = d.Update(func(*Tx) error { return nil })
		d.Close()
		if err != moved || calls != 1 {
			t.Fatalf("first write = %v after %d calls; want the hook's own error after 1", err, calls)
		}
		if after, _ := os.ReadFile(kd.db); string(after) != string(before) {
			t.Fatal("the schema migration was committed")
		}
		r, err := OpenReader(kd.dir, kd.db, refuse(&calls))
		if err != nil || r.schema != 1 || calls != 1 {
			t.Fatalf("reader: %v, %d calls; want schema 1 read, no call", err, calls)
		}
		r.Close()
	})

	t.Run("current file", func(t *testing.T) {
		kd := newKeyDir(t)
		mustOpen(t, kd, true).Close()
		var calls int
		d, err := OpenWriter(kd.dir, kd.db, refuse(&calls))
		if err != nil || calls != 0 {
			t.Fatalf("open = %v after %d calls; want it open, no call", err, calls)
		}
		d.Close()
	})

	t.Run("reader of no file", func(t *testing.T) {
		kd := newKeyDir(t)
		var calls int
		_, err := OpenReader(kd.dir, kd.db, refuse(&calls))
		if !errors.Is(err, fs.ErrNotExist) || calls != 0 {
			t.Fatalf("reader = %v after %d calls; want not-exist, no call", err, calls)
		}
	})
}
