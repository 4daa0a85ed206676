package db

import (
	"fmt"
	"math"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// BenchmarkRenumberHistory renumbers a history at the last sequence
// number holding n entries (a hostile file's; AppendHistory keeps
// HistoryLimit), one bbolt commit per op, the file made afresh before
// each (not timed). Its B/op is the renumber's allocation, which was the
// whole history's.
func BenchmarkRenumberHistory(b *testing.B) {
	for _, n := range []int{HistoryLimit, 100_000, 1_000_000} {
		b.Run(fmt.Sprint("entries=", n), func(b *testing.B) {
			b.ReportAllocs()
			v, err := encodeHistory(HistoryEntry{Gen: 7, Reason: "resumed", Job: "job-0123456789", Ticket: "0123456789abcdef0123456789abcdef", Bytes: 48211})
			if err != nil {
				b.Fatal(err)
			}
			for range b.N {
				b.StopTimer()
				kd := newKeyDir(b)
				d, err := OpenWriter(kd.dir, kd.db, testOpts)
				if err != nil {
					b.Fatal(err)
				}
				for start := 0; start < n; start += 100_000 {
					if err := d.bdb.Update(func(tx *bolt.Tx) error {
						h := tx.Bucket([]byte(bucketHistory))
						h.FillPercent = 1
						for i := start; i < min(start+100_000, n); i++ {
							if err := h.Put(historyKey(math.MaxUint64-uint64(n-1-i)), v); err != nil {
								return err
							}
						}
						return nil
					}); err != nil {
						b.Fatal(err)
					}
				}
				b.StartTimer()
				if err := d.Update(func(tx *Tx) error { _, err := tx.RenumberHistory(); return err }); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				d.Close()
			}
		})
	}
}
