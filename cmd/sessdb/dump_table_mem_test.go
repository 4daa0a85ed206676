package main

import (
	"context"
	"io"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
	"testing"
	"time"

	"sessdb/internal/sample"
	"sessdb/store"
)

// dump's tables hold each key's cells until the walk ends (a table needs
// every row for its widths), not the key's report: a report held whole,
// with the structs it points to, was about 2.7 KB a key at the peak of a
// dump of 100,000 keys (287 MB at most; 118 MB holding the cells), and a
// history table held every key's report beside its entries (476 MB for
// --history 64, 144 MB now). The whole table is no longer one string
// either. The bound is the heap's peak above the start, a key, over 8,000
// keys with the collector run at 5%: holding the reports, 1,470 to 2,600
// B a key (four runs of each table); holding the cells, 690 to 830.
func TestDumpTablesHoldCellsNotReports(t *testing.T) {
	if testing.Short() {
		t.Skip("8,000 keys")
	}
	atSampleTime(t)
	const n = 8000
	root := filepath.Join(t.TempDir(), "sessions")
	genSessions(t, root, n)
	for _, args := range [][]string{{"dump"}, {"dump", "--wide"}, {"dump", "--history", "64"}} {
		peak := dumpPeakHeap(t, append(args, root))
		perKey := peak / n
		t.Logf("%v: peak heap %d B above the start, %d B a key", args, peak, perKey)
		if perKey > 1200 {
			t.Errorf("%v held %d B a key at its peak (bound 1,200): the reports are held, not the rows", args, perKey)
		}
	}
}

// dumpPeakHeap runs the command in this process and returns the most heap
// its objects took above what they took before it, sampled every 200 µs.
func dumpPeakHeap(t *testing.T, args []string) int64 {
	t.Helper()
	defer debug.SetGCPercent(debug.SetGCPercent(5))
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	heap := func() int64 { metrics.Read(sample); return int64(sample[0].Value.Uint64()) }
	runtime.GC()
	base := heap()
	var high atomic.Int64
	high.Store(base)
	done := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			if h := heap(); h > high.Load() {
				high.Store(h)
			}
			select {
			case <-done:
				return
			case <-time.After(200 * time.Microsecond):
			}
		}
	}()
	code := run(args, io.Discard, io.Discard)
	close(done)
	<-sampled
	if code != exitOK {
		t.Fatalf("%v: exit %d", args, code)
	}
	return high.Load() - base
}

// BenchmarkDumpTableHeld walks 2,000 generated keys as dump does and holds
// what its key table holds until the walk ends, side by side: each key's
// report whole (the table before d3154be, "reports") and each key's
// cells ("cells"). held-B/key is the live heap at the walk's end, after a
// collection, above what it was before the walk: about 1,065 B for the
// reports and 418 B for the cells (memleft46, 5 walks each).
func BenchmarkDumpTableHeld(b *testing.B) {
	const n = 2000
	root := filepath.Join(b.TempDir(), "sessions")
	genSessions(b, root, n)
	st, err := store.New(root, store.Options{Now: func() time.Time { return sample.Time.Add(time.Hour) }})
	if err != nil {
		b.Fatal(err)
	}
	live := func() uint64 {
		var m runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	for _, holds := range []string{"reports", "cells"} {
		b.Run(holds, func(b *testing.B) {
			var held uint64
			for b.Loop() {
				var reports []store.KeyReport
				t := keyTable{}
				start := live()
				err := st.InspectWith(context.Background(), store.InspectOptions{}, func(r store.KeyReport) error {
					if r = forTable(r); holds == "reports" {
						reports = append(reports, r)
					} else {
						t.add(r)
					}
					return nil
				})
				if err != nil {
					b.Fatal(err)
				}
				held += live() - start
				runtime.KeepAlive(reports)
				runtime.KeepAlive(t.rows)
			}
			b.ReportMetric(float64(held)/float64(b.N)/n, "held-B/key")
		})
	}
}
