package engage

import (
	"bufio"
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"strconv"
	"testing"
)

// Run with: go test -run '^$' -bench Estimate -benchmem ./engage/

// BenchmarkDetails picks the chart's detail panels from a replay of 24,000
// stretches of pruned requests (a transcript can hold one every eight
// requests), beside its baseline: counting each request's switches once,
// which any choice must. Picking must cost about as much as the baseline,
// not a pass over the stretches per stretch dropped (quadratic: 31 times
// the baseline before f61f266). Run with:
// go test -run '^$' -bench Details ./engage/
func BenchmarkDetails(b *testing.B) {
	rp := stretches(24000, rand.New(rand.NewPCG(3, 4)))
	b.Run("baseline=count-switches", func(b *testing.B) {
		sum := 0
		for b.Loop() {
			for n := 1; n <= len(rp.Rows); n++ {
				sum += switches(rp, n, func(r *Row) bool { return r.Stateless }) + switches(rp, n, func(r *Row) bool { return r.Sticky })
			}
		}
		if sum == 0 {
			b.Fatal("no switches")
		}
	})
	b.Run("pick", func(b *testing.B) {
		for b.Loop() {
			if d := details(rp); len(d) != maxDetails {
				b.Fatalf("%d detail panels, want %d", len(d), maxDetails)
			}
		}
	})
}

func BenchmarkEstimate(b *testing.B) {
	benchmarkEstimate(b, filepath.Join(shared(b, "pi"), "before-compaction.jsonl"))
}

func BenchmarkEstimate10x(b *testing.B) {
	benchmarkEstimate(b, tenfold(b, filepath.Join(shared(b, "pi"), "before-compaction.jsonl"), b.TempDir()))
}

// benchmarkEstimate reads the file through Read (which streams it) and
// reports, besides time and allocation, the heap the result retains and the
// peak heap of one read, both per MB of input: flat memory means both shrink
// per MB as the file grows ten times.
func benchmarkEstimate(b *testing.B, path string) {
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	retained, peak := heapOfOneRead(b, path)
	b.SetBytes(fi.Size())
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		tr, err := ReadFile(path)
		if err != nil {
			b.Fatal(err)
		}
		if tr.Final.Tokens == 0 {
			b.Fatal("no estimate")
		}
	}
	b.ReportMetric(float64(retained), "retained-B")
	b.ReportMetric(float64(peak), "peak-heap-B")
}

// heapOfOneRead measures one read: the live heap the Transcript keeps, and
// the peak heap while reading, sampled continuously with the collector set
// to run after every 5% of growth so that garbage does not hide the live
// set. The sample is an upper bound on the live peak.
func heapOfOneRead(tb testing.TB, path string) (retained, peak int64) {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	heap := func() int64 { metrics.Read(sample); return int64(sample[0].Value.Uint64()) }

	// Collect twice: an object with a finalizer or cleanup (an *os.File)
	// is freed one cycle after it becomes unreachable. The median of three
	// reads keeps one cycle's stragglers out of the figure.
	gc := func() { runtime.GC(); runtime.GC() }
	var r [3]int64
	for i := range r {
		gc()
		base := heap()
		tr, err := ReadFile(path)
		if err != nil {
			tb.Fatal(err)
		}
		gc()
		r[i] = heap() - base
		runtime.KeepAlive(tr)
	}
	slices.Sort(r[:])
	retained = r[1]

	defer debug.SetGCPercent(debug.SetGCPercent(5))
	runtime.GC()
	base := heap()
	done := make(chan struct{})
	high := base
	go func() {
		defer close(done)
		if _, err := ReadFile(path); err != nil {
			tb.Error(err)
		}
	}()
	for {
		select {
		case <-done:
			return retained, high - base
		default:
			high = max(high, heap())
			runtime.Gosched()
		}
	}
}

// tenfold writes a transcript ten times the size of src into dir: the header
// once, then the body ten times. The file is version 1, so pi's migration
// chains the copies into one branch; compaction indexes are shifted into
// their own copy so each copy compacts as the original does.
func tenfold(tb testing.TB, src, dir string) string {
	data, err := os.ReadFile(src)
	if err != nil {
		tb.Fatal(err)
	}
	nl := bytes.IndexByte(data, '\n')
	header, body := data[:nl+1], data[nl+1:]
	entries := bytes.Count(body, []byte{'\n'})
	idx := regexp.MustCompile(`"firstKeptEntryIndex":(\d+)`)
	path := filepath.Join(dir, "tenfold.jsonl")
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	w := bufio.NewWriter(f)
	w.Write(header)
	for k := 0; k < 10; k++ {
		w.Write(idx.ReplaceAllFunc(body, func(m []byte) []byte {
			n, _ := strconv.Atoi(string(idx.FindSubmatch(m)[1]))
			return fmt.Appendf(nil, `"firstKeptEntryIndex":%d`, n+k*entries)
		}))
	}
	if err := w.Flush(); err != nil {
		tb.Fatal(err)
	}
	if err := f.Close(); err != nil {
		tb.Fatal(err)
	}
	return path
}
