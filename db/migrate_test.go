package db

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

var migrationNow = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

// migrationTests holds one case per entry of migrations, in the same order.
// prepare writes, through raw bbolt, what a file at the step's previous
// version may hold; check inspects the file after the step, in the
// transaction that ran it.
var migrationTests = []struct {
	name    string
	prepare func(tx *bolt.Tx) error
	check   func(t *testing.T, tx *bolt.Tx)
}{
	{
		name:    "v0 to v1 creates the buckets, schema and created",
		prepare: func(*bolt.Tx) error { return nil }, // bbolt's empty file is schema 0
		check: func(t *testing.T, tx *bolt.Tx) {
			m, err := readMeta(boltRoot{tx}, SchemaVersion)
			if err != nil || m != (Meta{Schema: 1, Created: migrationNow.UnixNano()}) {
				t.Errorf("meta = %+v, %v; want schema 1 created %d", m, err, migrationNow.UnixNano())
			}
			for _, name := range []string{bucketSidecars, bucketHistory} {
				b := tx.Bucket([]byte(name))
				if b == nil {
					t.Errorf("no %s/ bucket", name)
				} else if k, _ := b.Cursor().First(); k != nil {
					t.Errorf("%s/ is not empty: %q", name, k)
				}
			}
		},
	},
	{
		name:    "v1 to v2 rewrites nothing; schema 1 records read with the defaults",
		prepare: writeSchema1Records,
		check: func(t *testing.T, tx *bolt.Tx) {
			m, err := readMeta(boltRoot{tx}, SchemaVersion)
			if err != nil || m.Schema != 2 {
				t.Errorf("meta = %+v, %v; want schema 2", m, err)
			}
			for _, name := range []string{bucketSidecars, bucketHistory} {
				if got, want := bucketDump(tx, name), schema1Dump[name]; got != want {
					t.Errorf("%s/ was rewritten:\nbefore %s\nafter  %s", name, want, got)
				}
			}
			h, err := readHistory(boltView{tx.Bucket([]byte(bucketHistory))}, 0)
			if err != nil || !reflect.DeepEqual(h, schema1History) {
				t.Errorf("history reads %+v, %v; want %+v", h, err, schema1History)
			}
			s, err := readSidecars(boltView{tx.Bucket([]byte(bucketSidecars))})
			if err != nil || s.Pending == nil || *s.Pending != schema1Pending {
				t.Errorf("pending reads %+v, %v; want %+v", s.Pending, err, schema1Pending)
			}
		},
	},
}

// historyV1 and pendingV1 are the records as schema 1 wrote them.
type historyV1 struct {
	At       int64  `msgpack:"a"`
	Resumed  bool   `msgpack:"r"`
	Reason   string `msgpack:"w"`
	Bytes    int64  `msgpack:"b"`
	Chain    uint64 `msgpack:"c"`
	Job      string `msgpack:"j"`
	TornTail bool   `msgpack:"t"`
}

type pendingV1 struct {
	Tmp    string `msgpack:"t"`
	Size   int64  `msgpack:"s"`
	CRC32C uint64 `msgpack:"c"`
	Gen    uint64 `msgpack:"g"`
}

// What a schema 1 file holds, and what schema 2 reads of it: Seq and Gen
// from the key, every new field zero.
var (
	schema1History = []HistoryEntry{
		{Seq: 3, Gen: 3, At: 3e9, Reason: "absent", Bytes: 30, Job: "job-3"},
		{Seq: 4, Gen: 4, At: 4e9, Resumed: true, Reason: "resumed", Bytes: 40, Chain: 1, Job: "job-4", TornTail: true},
	}
	schema1Pending = Pending{Tmp: ".current.jsonl.tmp-4", Size: 40, CRC32C: 7, Gen: 4}
	schema1Dump    = map[string]string{}
)

func writeSchema1Records(tx *bolt.Tx) error {
	h := tx.Bucket([]byte(bucketHistory))
	for _, e := range schema1History {
		v, err := marshal(historyV1{e.At, e.Resumed, e.Reason, e.Bytes, e.Chain, e.Job, e.TornTail})
		if err != nil {
			return err
		}
		if err := h.Put(historyKey(e.Gen), v); err != nil {
			return err
		}
	}
	p := schema1Pending
	v, err := marshal(pendingV1{p.Tmp, p.Size, p.CRC32C, p.Gen})
	if err != nil {
		return err
	}
	if err := tx.Bucket([]byte(bucketSidecars)).Put([]byte(keyPending), v); err != nil {
		return err
	}
	for _, name := range []string{bucketSidecars, bucketHistory} {
		schema1Dump[name] = bucketDump(tx, name)
	}
	return nil
}

// bucketDump shows every key and value of a top-level bucket.
func bucketDump(tx *bolt.Tx, name string) string {
	var b strings.Builder
	tx.Bucket([]byte(name)).ForEach(func(k, v []byte) error {
		fmt.Fprintf(&b, "%x=%x ", k, v)
		return nil
	})
	return b.String()
}

func TestMigrations(t *testing.T) {
	if len(migrationTests) != len(migrations) {
		t.Fatalf("%d migrations, %d migration tests: every migration needs a case", len(migrations), len(migrationTests))
	}
	for i, mt := range migrationTests {
		t.Run(mt.name, func(t *testing.T) {
			kd := newKeyDir(t)
			bdb, err := bolt.Open(kd.db, 0o600, nil)
			if err != nil {
				t.Fatal(err)
			}
			err = bdb.Update(func(tx *bolt.Tx) error {
				if i > 0 { // bring the file to the version this step starts from
					if _, err := migrate(tx, migrations[:i], migrationNow); err != nil {
						return err
					}
				}
				return mt.prepare(tx)
			})
			if err == nil { // the step itself, as OpenWriter runs it
				err = bdb.Update(func(tx *bolt.Tx) error {
					_, err := migrate(tx, migrations[:i+1], migrationNow)
					if err == nil {
						mt.check(t, tx)
					}
					return err
				})
			}
			if cerr := bdb.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				t.Fatal(err)
			}
			// A writer's first write takes the file the rest of the way
			// (a schema 0 file its open), and it reads.
			d, err := OpenWriter(kd.dir, kd.db, Options{LockTimeout: testOpts.LockTimeout, Now: func() time.Time { return migrationNow }})
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			if err := d.Update(func(*Tx) error { return nil }); err != nil {
				t.Fatal(err)
			}
			var m Meta
			if err := d.View(func(tx *Tx) (err error) { m, err = tx.Meta(); return err }); err != nil || m.Schema != SchemaVersion {
				t.Errorf("schema after a write = %d, %v; want %d", m.Schema, err, SchemaVersion)
			}
		})
	}
}

func TestMigrationsAreOrdered(t *testing.T) {
	for i, m := range migrations {
		if m.version != uint64(i+1) {
			t.Errorf("migrations[%d] produces version %d, want %d", i, m.version, i+1)
		}
	}
	if last := migrations[len(migrations)-1].version; last != SchemaVersion {
		t.Errorf("the last migration produces version %d, SchemaVersion is %d", last, SchemaVersion)
	}
}

// All pending steps and the version bump are one transaction: a failing
// later step leaves nothing of the earlier ones.
func TestMigrationIsOneTransaction(t *testing.T) {
	kd := newKeyDir(t)
	bdb, err := bolt.Open(kd.db, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer bdb.Close()
	boom := errors.New("boom")
	steps := append(migrations[:len(migrations):len(migrations)], migration{
		version: SchemaVersion + 1,
		migrate: func(*bolt.Tx, time.Time) error { return boom },
	})
	err = bdb.Update(func(tx *bolt.Tx) error { _, err := migrate(tx, steps, migrationNow); return err })
	wantErr(t, err, boom)
	bdb.View(func(tx *bolt.Tx) error {
		if k, _ := tx.Cursor().First(); k != nil {
			t.Errorf("a failed migration left %q in the root", k)
		}
		return nil
	})
}

func setSchema(t *testing.T, path string, v uint64) {
	t.Helper()
	bdb, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer bdb.Close()
	err = bdb.Update(func(tx *bolt.Tx) error {
		return tx.Bucket([]byte(bucketMeta)).Put([]byte(keySchema), encodeUint(v))
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestNewerSchemaIsNeverWritten(t *testing.T) {
	kd := makeDB(t, 2)
	setSchema(t, kd.db, SchemaVersion+1)
	before := dirState(t, kd)
	time.Sleep(10 * time.Millisecond)
	for _, open := range []func(*os.File, string, Options) (*DB, error){OpenReader, OpenWriter} {
		d, err := open(kd.dir, kd.db, testOpts)
		wantErr(t, err, ErrNewerSchema)
		if d != nil {
			t.Error("a DB was returned with the error")
		}
	}
	if after := dirState(t, kd); after != before {
		t.Errorf("newer-schema file changed:\nbefore %s\nafter  %s", before, after)
	}
	if n := keyLockCount(); n != 0 {
		t.Errorf("%d in-process locks held after refused opens", n)
	}
}

// A reader reads an older file as far as it goes; a writer migrates it.
func TestOlderSchema(t *testing.T) {
	kd := newKeyDir(t)
	bdb, err := bolt.Open(kd.db, 0o600, nil) // schema 0: bbolt's empty file
	if err != nil {
		t.Fatal(err)
	}
	bdb.Close()
	before := dirState(t, kd)

	r := mustOpen(t, kd, false)
	err = r.View(func(tx *Tx) error {
		m, err1 := tx.Meta()
		s, err2 := tx.Sidecars()
		h, err3 := tx.History(0)
		if m != (Meta{}) || s != (Sidecars{}) || len(h) != 0 {
			t.Errorf("schema 0 file reads as meta %+v sidecars %+v history %v, want all empty", m, s, h)
		}
		return errors.Join(err1, err2, err3)
	})
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	if after := dirState(t, kd); after != before {
		t.Errorf("reader changed the old file")
	}

	w := mustOpen(t, kd, true)
	if w.schema != SchemaVersion {
		t.Errorf("writer left schema %d, want %d", w.schema, SchemaVersion)
	}
}

func TestBrokenMetaIsDamage(t *testing.T) {
	cases := map[string]func(tx *bolt.Tx) error{
		"no schema key": func(tx *bolt.Tx) error { return tx.Bucket([]byte(bucketMeta)).Delete([]byte(keySchema)) },
		"schema 0":      func(tx *bolt.Tx) error { return tx.Bucket([]byte(bucketMeta)).Put([]byte(keySchema), encodeUint(0)) },
		"schema string": func(tx *bolt.Tx) error {
			return tx.Bucket([]byte(bucketMeta)).Put([]byte(keySchema), []byte{0xa1, '1'})
		},
		"no created": func(tx *bolt.Tx) error { return tx.Bucket([]byte(bucketMeta)).Delete([]byte(keyCreated)) },
		"no history": func(tx *bolt.Tx) error { return tx.DeleteBucket([]byte(bucketHistory)) },
		"no meta":    func(tx *bolt.Tx) error { return tx.DeleteBucket([]byte(bucketMeta)) },
	}
	for name, damage := range cases {
		t.Run(name, func(t *testing.T) {
			kd := makeDB(t, 1)
			bdb, err := bolt.Open(kd.db, 0o600, nil)
			if err != nil {
				t.Fatal(err)
			}
			err = bdb.Update(damage)
			bdb.Close()
			if err != nil {
				t.Fatal(err)
			}
			before := dirState(t, kd)
			for _, open := range []func(*os.File, string, Options) (*DB, error){OpenReader, OpenWriter} {
				_, err := open(kd.dir, kd.db, testOpts)
				wantErr(t, err, ErrDamaged)
			}
			if after := dirState(t, kd); after != before {
				t.Errorf("a damaged file was written")
			}
		})
	}
}
