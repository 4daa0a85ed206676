package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// The chart goes to its file as it is drawn, never whole in memory: a
// transcript's entry ids are the writer's choice and each goes into the
// chart's tooltips, XML-escaped ("&" is five bytes), in the overview and
// again in a detail panel, so a chart can be five times its transcript.
// Built in a buffer first, a 20 MB transcript of 100 requests with 100 KiB
// ids held its 100 MB chart (and the buffer's doublings) at once; the
// table and the JSON stream theirs. What the run holds at its peak stays
// under half the chart. The case is 100 requests with 50 KiB ids: a 10 MB
// transcript and a 50 MB chart: built in a buffer, it failed 20 runs of
// 20 (170 MB or more held at the peak, the bound 26 MB; streamed, 7.5
// MB), at less than half the CPU the race detector spent on the 100 MB
// one (2.8 s of CPU alone, 6.5 s before).
func TestEngageReplaySVGIsNotHeldInMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 10 MB transcript and a 50 MB chart")
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "t.jsonl")
	f, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	fmt.Fprintln(w, `{"type":"session","version":3,"id":"s","timestamp":"2026-11-01T00:00:00.000Z","cwd":"/w"}`)
	parent := "null"
	for i := 0; i < 100; i++ {
		// Usage over and under the threshold in turn: the stateless
		// check switches on every request, each a tooltip with the id.
		id := fmt.Sprintf("%03d%s", i, strings.Repeat("&", 50<<10))
		fmt.Fprintf(w, `{"type":"message","id":"%s","parentId":%s,"message":{"role":"assistant","content":[],"usage":{"totalTokens":%d},"stopReason":"stop"}}`+"\n", id, parent, []int{190000, 100000}[i%2])
		parent = `"` + id + `"`
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()

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
	chart := filepath.Join(dir, "c.svg")
	code := run([]string{"engage", "replay", "--svg", chart, file}, io.Discard, io.Discard)
	close(done)
	<-sampled
	if code != exitOK {
		t.Fatalf("exit %d", code)
	}
	st, err := os.Stat(chart)
	if err != nil {
		t.Fatal(err)
	}
	peak := high.Load() - base
	t.Logf("chart %d B; peak heap %d B above the start", st.Size(), peak)
	if st.Size() < 40<<20 {
		t.Fatalf("a chart of %d B: the case no longer makes one five times its transcript", st.Size())
	}
	if peak > st.Size()/2 {
		t.Errorf("the run held %d B at its peak for a %d B chart: the chart was held in memory", peak, st.Size())
	}
}
