package fleet

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"sessdb/fleet/etcdmeta"
	"sessdb/internal/bench"
	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// statsBenchKeys is the size of BenchmarkFleetStats' fleet:
// SESSDB_BENCH_STATS_KEYS, or 1,000 keys, each with a full 64-entry
// history: one round of -benchtime 3x takes about a minute on a shared
// two-core machine, the fleet's making included.
func statsBenchKeys(b *testing.B) int {
	s := os.Getenv("SESSDB_BENCH_STATS_KEYS")
	if s == "" {
		return 1000
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		b.Fatalf("SESSDB_BENCH_STATS_KEYS=%q: want a count of keys", s)
	}
	return n
}

// BenchmarkFleetStats times stats on a fleet (Backend.Stats, one op a
// walk of the whole fleet) side by side with its baselines on the same
// keys, on one member:
//
//	stats/getbatch=N  Backend.Stats, a 24 h window, reading N keys'
//	                  records and histories in one etcd read (getBatch;
//	                  1: a Get a key, as before 2026-12)
//	dump/history=0    dump's fleet walk reading no history (Inspect, History 0):
//	                  the records listed, each generation file's stat and first line
//	dump/history=3    dump --history 3's walk (History 3; dump's default is 0)
//	check             check's walk (Backend.Check, no repair): the records and
//	                  the histories' names listed, each generation file read
//	reap/dry-run      reap --dry-run's walk with a TTL no key is past: the
//	                  records listed, each key judged, the transcripts dir swept
//	root/stats        Store.Stats on a sessions root of the same keys: each key dir
//	                  a copy of one left by 64 promotions
//
// Each key's record names a 64 KiB generation file and its history holds
// 64 entries, copied from a key that was promoted 64 times (as the fleet
// writes them), all inside the window: stats counts every key truncated.
// Besides ns/op, B/op and allocs/op (a walk), each reports keys/s and
// cpu-ns/op, the process's CPU time a walk (user and system: the walk's,
// the member's and the collector's).
//
//	go test -run '^$' -bench BenchmarkFleetStats -benchtime 3x ./fleet/
//	SESSDB_BENCH_STATS_KEYS=10000 go test -run '^$' -bench BenchmarkFleetStats -benchtime 1x -timeout 1h ./fleet/
func BenchmarkFleetStats(b *testing.B) {
	keys := statsBenchKeys(b)
	c := etcdtest.Start1(b)
	e := newBenchEnv(b, c)
	root := statsFleet(b, e, keys)
	ctx := context.Background()
	walk := func(b *testing.B, fn func() (int, error)) {
		b.ReportAllocs()
		n := 0
		cpu := processCPU(b)
		for b.Loop() {
			got, err := fn()
			if err != nil {
				b.Fatal(err)
			}
			if got != keys {
				b.Fatalf("%d keys walked; want %d", got, keys)
			}
			n++
		}
		b.ReportMetric(float64(n*keys)/b.Elapsed().Seconds(), "keys/s")
		b.ReportMetric(float64(processCPU(b)-cpu)/float64(n), "cpu-ns/op")
	}
	for _, batch := range []int{getBatch, 1} {
		b.Run(fmt.Sprintf("stats/getbatch=%d", batch), func(b *testing.B) {
			defer func(saved int) { getBatch = saved }(getBatch)
			getBatch = batch
			walk(b, func() (int, error) {
				st, err := e.be.Stats(ctx, StatsOptions{Window: 24 * time.Hour, Bounds: benchBounds})
				if err != nil {
					return 0, err
				}
				if st.Promotions.TruncatedKeys != keys || st.Promotions.Count(nil) != int64(keys*etcdmeta.HistoryLimit) {
					b.Fatalf("truncated %d, entries %d; want every key's 64 entries", st.Promotions.TruncatedKeys, st.Promotions.Count(nil))
				}
				return st.Keys, nil
			})
		})
	}
	for _, h := range []int{0, 3} {
		b.Run(fmt.Sprintf("dump/history=%d", h), func(b *testing.B) {
			walk(b, func() (int, error) {
				n := 0
				err := e.be.Inspect(ctx, InspectOptions{Bounds: benchBounds, History: h}, func(r Report) error {
					if r.Verdict == nil || len(r.History) != h {
						return fmt.Errorf("%s: verdict %v, %d history entries", r.Name, r.Verdict, len(r.History))
					}
					n++
					return nil
				})
				return n, err
			})
		})
	}
	b.Run("check", func(b *testing.B) {
		walk(b, func() (int, error) {
			sum, err := e.be.Check(ctx, CheckOptions{}, nil)
			if err == nil && sum.Problems != 0 {
				err = fmt.Errorf("check found %d problems", sum.Problems)
			}
			return sum.Keys, err
		})
	})
	b.Run("reap/dry-run", func(b *testing.B) {
		walk(b, func() (int, error) {
			res, err := e.be.Reap(ctx, ReapOptions{TTL: 1000 * time.Hour, DryRun: true})
			if err == nil && (len(res.Removed) != 0 || len(res.Skipped) != 0) {
				err = fmt.Errorf("reap would remove %d keys and skip %d", len(res.Removed), len(res.Skipped))
			}
			return res.Kept, err
		})
	})
	b.Run("root/stats", func(b *testing.B) {
		s, err := store.New(root, store.Options{Bounds: benchBounds})
		if err != nil {
			b.Fatal(err)
		}
		walk(b, func() (int, error) {
			st, err := s.Stats(ctx, store.StatsOptions{Window: 24 * time.Hour})
			if err != nil {
				return 0, err
			}
			if st.Promotions.TruncatedKeys != keys {
				b.Fatalf("truncated %d; want %d", st.Promotions.TruncatedKeys, keys)
			}
			return st.Keys, nil
		})
	})
}

// processCPU is the CPU time the process has used, user and system, in
// ns: the walk's, the in-process member's and the collector's, which on a
// machine shared with other work varies less than the wall time.
func processCPU(b *testing.B) int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// statsFleet fills e's fleet with n keys, each a copy of one promoted 64
// times (its record, renamed to the key's own generation file, a copy of
// that file, and its 64 history entries, brought in with Create), and
// returns a sessions root of n key dirs, each a copy of one promoted 64
// times on a key-dir store.
func statsFleet(b *testing.B, e *benchEnv, n int) string {
	ctx := context.Background()
	data := bench.Transcript(64 << 10)
	src := store.Key("github", "bench", "stats")
	e.mustFill(e.s, src, data, etcdmeta.HistoryLimit)
	st, err := e.be.meta.Get(ctx, src)
	if err != nil || len(st.History) != etcdmeta.HistoryLimit {
		b.Fatalf("the template's history: %d entries, %v", len(st.History), err)
	}
	body, err := os.ReadFile(filepath.Join(e.dir, st.Record.Transcript.File))
	if err != nil {
		b.Fatal(err)
	}
	// The template's own record and history are removed: the fleet
	// holds the n keys alone.
	if _, err := e.be.meta.Delete(ctx, src, st.Rev); err != nil {
		b.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(e.dir, src)); err != nil {
		b.Fatal(err)
	}

	rootTmpl := filepath.Join(b.TempDir(), "template")
	ks, err := store.New(rootTmpl, store.Options{Bounds: benchBounds})
	if err != nil {
		b.Fatal(err)
	}
	tmpl := &benchEnv{b: b, work: b.TempDir()}
	tmpl.mustFill(ks, src, data, etcdmeta.HistoryLimit)
	keyFiles, err := os.ReadDir(filepath.Join(rootTmpl, src))
	if err != nil {
		b.Fatal(err)
	}
	root := filepath.Join(b.TempDir(), "sessions")
	if err := os.Mkdir(root, 0o700); err != nil {
		b.Fatal(err)
	}

	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for w := range 4 {
		wg.Go(func() {
			for i := w; i < n; i += 4 {
				if err := statsKey(ctx, e, st, body, store.Key("github", "bench/stats", strconv.Itoa(i))); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
	for i := range n {
		key := store.Key("github", "bench/stats", strconv.Itoa(i))
		if err := os.Mkdir(filepath.Join(root, key), 0o700); err != nil {
			b.Fatal(err)
		}
		for _, f := range keyFiles {
			if !f.Type().IsRegular() {
				continue
			}
			d, err := os.ReadFile(filepath.Join(rootTmpl, src, f.Name()))
			if err == nil {
				err = os.WriteFile(filepath.Join(root, key, f.Name()), d, 0o600)
			}
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	return root
}

// statsKey brings key into e's fleet as a copy of st, the template's
// state, whose generation file holds body.
func statsKey(ctx context.Context, e *benchEnv, st etcdmeta.State, body []byte, key string) error {
	rec := st.Record
	t := *rec.Transcript
	t.File = fmt.Sprintf("%s/%016x-%s.jsonl", key, t.Gen, randHex(8))
	rec.Transcript = &t
	if err := os.MkdirAll(filepath.Join(e.dir, key), 0o700); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(e.dir, t.File), body, 0o600); err != nil {
		return err
	}
	_, err := e.be.meta.Create(ctx, key, rec, st.History)
	return err
}
