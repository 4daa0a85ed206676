package db

import (
	"errors"
	mathrand "math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// The walk's rules about what bbolt never writes (a value past a record,
// a key past bbolt's MaxKeySize, a node of more than four elements past a
// page) are claims about bbolt's writer: every file it writes, of any
// shape, must pass. Here bbolt itself writes, commit after commit, keys of
// 1 byte to its MaxKeySize, values of none to a whole record, nested and
// inline buckets, every fill percent it takes, and deletes; the walk, as a
// writer's open runs it, takes the file after every commit, and so does
// bbolt's own check at the end of each round.
func TestTheWalkTakesEveryShapeBboltWrites(t *testing.T) {
	rng := mathrand.New(mathrand.NewPCG(3, 4))
	size := func() int {
		switch r := rng.IntN(100); {
		case r < 2:
			return rng.IntN(MaxRecordBytes + 1)
		case r < 20:
			return rng.IntN(3 * PageSize)
		default:
			return rng.IntN(64)
		}
	}
	keyOf := func() []byte {
		n := 1 + rng.IntN(16)
		if rng.IntN(50) == 0 {
			n = 1 + rng.IntN(maxKeyBytes)
		}
		k := make([]byte, n)
		for i := range k {
			k[i] = byte(rng.IntN(256))
		}
		return k
	}
	commits := 0
	for round := range 12 {
		path := filepath.Join(t.TempDir(), "bbolt.db")
		b, err := bolt.Open(path, 0o600, &bolt.Options{PageSize: PageSize})
		if err != nil {
			t.Fatal(err)
		}
		fill := []float64{0.1, 0.5, 1.0}[round%3]
		var keys [][]byte
		for range 25 {
			err := b.Update(func(tx *bolt.Tx) error {
				top, err := tx.CreateBucketIfNotExists([]byte{byte(rng.IntN(3))})
				if err != nil {
					return err
				}
				top.FillPercent = fill
				bk := top
				if rng.IntN(4) == 0 { // a nested bucket: inline while small
					if bk, err = top.CreateBucketIfNotExists([]byte("nested")); err != nil {
						return err
					}
					bk.FillPercent = fill
				}
				for range rng.IntN(40) {
					if len(keys) > 0 && rng.IntN(4) == 0 {
						if err := bk.Delete(keys[rng.IntN(len(keys))]); err != nil && !errors.Is(err, berrors.ErrIncompatibleValue) {
							return err
						}
						continue
					}
					k := keyOf()
					if err := bk.Put(k, make([]byte, size())); err != nil && !errors.Is(err, berrors.ErrIncompatibleValue) {
						return err
					}
					keys = append(keys, k)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			commits++
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			st, err := f.Stat()
			if err == nil {
				var m MetaPages
				if m, err = InspectMeta(f, st.Size()); err == nil {
					err = precheckTree(f, m, true)
				}
			}
			f.Close()
			if err != nil {
				t.Fatalf("round %d (fill %.1f), commit %d, a file of %d bytes bbolt wrote: %v", round, fill, commits, st.Size(), err)
			}
		}
		if err := b.View(func(tx *bolt.Tx) error {
			for err := range tx.Check() {
				return err
			}
			return nil
		}); err != nil {
			t.Fatalf("round %d: bbolt's check: %v", round, err)
		}
		b.Close()
	}
	t.Logf("%d commits walked", commits)
}
