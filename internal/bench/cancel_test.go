package bench

import (
	"context"
	"errors"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"sessdb/gates"
	"sessdb/internal/faults"
)

// BenchmarkResolveContext is BenchmarkResolve's resume with a context
// that can end (context.WithCancel, never cancelled): what ResolveContext's
// checks between the copy's chunks cost beside Resolve, whose
// context.Background() the copy does not look at.
func BenchmarkResolveContext(b *testing.B) {
	for _, sz := range sizes {
		data := Transcript(sz.bytes)
		b.Run(sz.name+"/resume/sessdb", func(b *testing.B) {
			s := newStore(b, filepath.Join(workDir(b), "sessions"))
			key := benchKey(1)
			promoteN(b, s, key, data, 70)
			next := freshDirs(b)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			b.SetBytes(int64(len(data)))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				sess, err := s.ResolveContext(ctx, key, job, next())
				if err != nil || sess.Reason != gates.Resumed {
					b.Fatalf("resolve: %v %s", err, sess.Reason)
				}
			}
		})
	}
}

// BenchmarkResolveCancelledCopy is how promptly a resolve whose caller
// gives up during the copy of an 8 MiB transcript returns: its context is
// cancelled a moment (delay) after the ladder passed, while the copy runs,
// and the time from the cancel to ResolveContext's return is reported
// (cancel-to-return-p50-ns, -max-ns); a resolve that finished its copy
// before the cancel is counted apart (finished-before-cancel). Not run
// beside other tests: the fault it arms is process-wide.
func BenchmarkResolveCancelledCopy(b *testing.B) {
	data := Transcript(8 << 20)
	s := newStore(b, filepath.Join(workDir(b), "sessions"))
	key := benchKey(1)
	promoteN(b, s, key, data, 3)
	next := freshDirs(b)
	const delay = 500 * time.Microsecond
	var (
		mu         sync.Mutex
		cancelled  time.Time
		cancelNext context.CancelFunc
	)
	faults.Set(func(p faults.Point) error {
		if p == faults.ResolveAfterGates {
			mu.Lock()
			c := cancelNext
			mu.Unlock()
			time.AfterFunc(delay, func() {
				mu.Lock()
				cancelled = time.Now()
				mu.Unlock()
				c()
			})
		}
		return nil
	})
	defer faults.Set(nil)
	var lags []time.Duration
	finished := 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ctx, cancel := context.WithCancel(context.Background())
		mu.Lock()
		cancelNext, cancelled = cancel, time.Time{}
		mu.Unlock()
		_, err := s.ResolveContext(ctx, key, job, next())
		returned := time.Now()
		// The cancel may land after the return: wait for it, so that the
		// next resolve's is its own.
		for ctx.Err() == nil {
			time.Sleep(50 * time.Microsecond)
		}
		mu.Lock()
		at := cancelled
		mu.Unlock()
		switch {
		case err == nil:
			finished++
		case errors.Is(err, context.Canceled):
			lags = append(lags, returned.Sub(at))
		default:
			b.Fatalf("resolve: %v", err)
		}
		cancel()
	}
	b.StopTimer()
	if len(lags) > 0 {
		sort.Slice(lags, func(i, j int) bool { return lags[i] < lags[j] })
		b.ReportMetric(float64(lags[len(lags)/2].Nanoseconds()), "cancel-to-return-p50-ns")
		b.ReportMetric(float64(lags[len(lags)-1].Nanoseconds()), "cancel-to-return-max-ns")
	}
	b.ReportMetric(float64(finished), "finished-before-cancel")
}
