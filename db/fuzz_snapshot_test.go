package db

import (
	"bytes"
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// maxDamage bounds each line of a reader's error about a damaged meta.db:
// what is damaged, where, and a key named in at most 32 bytes.
const maxDamage = 512

// FuzzSnapshotView reads, as a reader of a small meta.db does, every
// record of any file the pre-check and the snapshot decoder let through
// (a meta.db is the host's, and another host's or a crash's): meta/,
// every sidecar, the history whole and its last entries. Each read gives
// records or a damage (or newer-schema) error of short lines (one per
// damaged sidecar), never a panic; the history's last n entries are the last n of the whole; the
// same bytes give the same answers.
func FuzzSnapshotView(f *testing.F) {
	kd := makeDB(f, 8)
	real, err := os.ReadFile(kd.db)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(real, uint8(3))
	// A history key of 3000 bytes: no sessdb wrote it, a hand or another
	// binary could.
	long := makeDB(f, 2)
	bdb, err := bolt.Open(long.db, 0o600, nil)
	if err != nil {
		f.Fatal(err)
	}
	v, _ := encodeHistory(HistoryEntry{Gen: 9, Reason: "resumed"})
	if err := bdb.Update(func(tx *bolt.Tx) error {
		return tx.Bucket([]byte(bucketHistory)).Put(bytes.Repeat([]byte{0xff}, 3000), v)
	}); err != nil {
		f.Fatal(err)
	}
	bdb.Close()
	b, err := os.ReadFile(long.db)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b, uint8(1))
	f.Fuzz(func(t *testing.T, b []byte, n uint8) {
		r := bytes.NewReader(b)
		if precheck(r, int64(len(b))) != nil {
			return
		}
		m, err := InspectMeta(r, int64(len(b)))
		if err != nil {
			t.Fatalf("precheck passed, InspectMeta: %v", err)
		}
		snap, err := readSnapshot(b, m)
		if err != nil {
			return // FuzzPrecheck's: ErrDamaged
		}
		check := func(what string, err error) {
			t.Helper()
			if err == nil {
				return
			}
			if !errors.Is(err, ErrDamaged) && !errors.Is(err, ErrNewerSchema) {
				t.Fatalf("%s: %v is neither damage nor a newer schema", what, err)
			}
			// readSidecars joins one line per damaged key (six keys).
			lines := strings.Split(err.Error(), "\n")
			for _, l := range lines {
				if len(l) > maxDamage || len(lines) > 6 {
					t.Fatalf("%s: an error of %d lines, one of %d bytes: %.300s", what, len(lines), len(l), err)
				}
			}
		}
		read := func() (Meta, Sidecars, []HistoryEntry, []HistoryEntry, [4]error) {
			var errs [4]error
			meta, err := readMeta(snap, SchemaVersion)
			errs[0] = err
			var sc Sidecars
			var all, last []HistoryEntry
			if bv := snap.bucket(bucketSidecars); bv != nil {
				sc, errs[1] = readSidecars(bv)
			}
			if bv := snap.bucket(bucketHistory); bv != nil {
				all, errs[2] = readHistory(bv, 0)
				last, errs[3] = readHistory(bv, int(n))
			}
			return meta, sc, all, last, errs
		}
		meta, sc, all, last, errs := read()
		for i, what := range []string{"meta", "sidecars", "history", "last history"} {
			check(what, errs[i])
		}
		_, verr := verify(snap)
		check("verify", verr)
		meta2, sc2, all2, last2, errs2 := read()
		if !reflect.DeepEqual(meta, meta2) || !reflect.DeepEqual(sc, sc2) || !reflect.DeepEqual(all, all2) || !reflect.DeepEqual(last, last2) || !reflect.DeepEqual(errs, errs2) {
			t.Fatalf("two reads of the same snapshot differ")
		}
		if errs[2] == nil && errs[3] == nil && n > 0 {
			want := all[max(0, len(all)-int(n)):]
			if !reflect.DeepEqual(last, want) && !(len(last) == 0 && len(want) == 0) {
				t.Fatalf("the last %d history entries are %+v; the whole history ends %+v", n, last, want)
			}
		}
	})
}
