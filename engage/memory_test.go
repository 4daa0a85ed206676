package engage

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"unsafe"
)

// The estimate streams: what Read keeps is a record per entry, never the
// text. Two transcripts with the same entries, one with every text 200 times
// longer (a 100x larger file), must leave the same heap behind, and the peak
// while reading the large one must stay far below its size.
func TestMemoryIndependentOfText(t *testing.T) {
	if testing.Short() {
		t.Skip("writes and reads a 15 MB transcript")
	}
	dir := t.TempDir()
	small := writeSynthetic(t, filepath.Join(dir, "small.jsonl"), 600, 100)
	large := writeSynthetic(t, filepath.Join(dir, "large.jsonl"), 600, 20000)
	rs, _ := heapOfOneRead(t, small)
	rl, peak := heapOfOneRead(t, large)
	fi, _ := os.Stat(large)
	t.Logf("retained: %d B (small file), %d B (file %d B); peak while reading the large one %d B", rs, rl, fi.Size(), peak)
	if rl > rs+rs/4 {
		t.Errorf("retained %d B for long texts vs %d B for short ones: the text is being kept", rl, rs)
	}
	if peak > fi.Size()/8 {
		t.Errorf("peak heap %d B reading a %d B file: not streaming", peak, fi.Size())
	}
}

// writeSynthetic writes a v3 transcript of n user/assistant/toolResult turns
// whose texts are textLen characters long, with usage that grows by turn.
func writeSynthetic(t *testing.T, path string, n, textLen int) string {
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	text := strings.Repeat("x", textLen)
	fmt.Fprintln(w, `{"type":"session","version":3,"id":"s","timestamp":"2026-03-10T09:14:55.120Z","cwd":"/w"}`)
	parent := "null"
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("%08x", i)
		switch i % 3 {
		case 0:
			fmt.Fprintf(w, `{"type":"message","id":"%s","parentId":%s,"timestamp":"t","message":{"role":"user","content":[{"type":"text","text":"%s"}]}}`+"\n", id, parent, text)
		case 1:
			fmt.Fprintf(w, `{"type":"message","id":"%s","parentId":%s,"timestamp":"t","message":{"role":"assistant","content":[{"type":"toolCall","id":"c","name":"bash","arguments":{"command":"%s"}}],"usage":{"input":1,"output":1,"cacheRead":%d,"cacheWrite":1,"totalTokens":0},"stopReason":"toolUse"}}`+"\n", id, parent, text, i*10)
		case 2:
			fmt.Fprintf(w, `{"type":"message","id":"%s","parentId":%s,"timestamp":"t","message":{"role":"toolResult","toolCallId":"c","toolName":"bash","content":[{"type":"text","text":"%s"}],"isError":false}}`+"\n", id, parent, text)
		}
		parent = `"` + id + `"`
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// What Read keeps does grow with the ids and model names, which it keeps as
// they are: with 400 entries whose ids and providers are 20 KB each, the
// retained heap is about the size of that text, and still within the
// file's size: the ids are kept once, not copied per use.
func TestMemoryBoundedByTheFile(t *testing.T) {
	if testing.Short() {
		t.Skip("writes and reads a 24 MB transcript")
	}
	path := filepath.Join(t.TempDir(), "long-ids.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	fmt.Fprintln(w, `{"type":"session","version":3,"id":"s","timestamp":"t","cwd":"/w"}`)
	const n, k = 400, 20000
	parent := "null"
	for i := range n {
		id := fmt.Sprintf("%08x%s", i, strings.Repeat("i", k))
		fmt.Fprintf(w, `{"type":"message","id":"%s","parentId":%s,"message":{"role":"assistant","content":[],"provider":"p%d%s","model":"m","usage":{"totalTokens":5},"stopReason":"stop"}}`+"\n", id, parent, i, strings.Repeat("p", k))
		parent = `"` + id + `"`
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	retained, _ := heapOfOneRead(t, path)
	t.Logf("retained %d B for a %d B file with %d B of ids and model names", retained, fi.Size(), 2*n*k)
	if retained > fi.Size() {
		t.Errorf("retained %d B, more than the file's %d B", retained, fi.Size())
	}
	if retained < n*k {
		t.Errorf("retained %d B, less than the %d B of ids alone: the test no longer measures what the docs say", retained, n*k)
	}
}

// A replay keeps one Row per request and nothing else of the kind: no list
// of Requests beside the rows, no rows grown by doubling. Over 10,000
// requests, what Replay allocates stays within the rows' own size, a flag
// per entry for each policy and a little more (§9 had about 1.2 KB of heap
// per request for the whole replay; the rows alone are 192 bytes).
func TestReplayAllocatesOneRowPerRequest(t *testing.T) {
	const entries = 30000
	path := writeSynthetic(t, filepath.Join(t.TempDir(), "long.jsonl"), entries, 10)
	tr, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	rp, err := tr.Replay(DefaultOptions())
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	n := len(rp.Rows)
	if n != entries/3 {
		t.Fatalf("%d requests, want %d", n, entries/3)
	}
	rows := int64(n) * int64(unsafe.Sizeof(Row{}))
	got := int64(after.TotalAlloc - before.TotalAlloc)
	limit := rows + 2*entries + 64<<10
	t.Logf("Replay allocated %d B for %d requests (%d B/request); the rows are %d B", got, n, got/int64(n), rows)
	if got > limit {
		t.Errorf("Replay allocated %d B for %d requests, over %d B (the rows' %d B, a flag per entry per policy, 64 KiB): it holds more than a row per request", got, n, limit, rows)
	}
}
