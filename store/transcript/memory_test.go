package transcript

import (
	"fmt"
	"io"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"testing"
)

// What Load keeps is bounded by the file: a record per entry that a
// parentId could reach. Entries no parentId can find (no id, a falsy one,
// an object; pi keeps them in its entries all the same) matter only as the
// leaf, so a staged file of 3-byte lines must not cost a 120-byte record
// each: at promote, 8 MiB of "0" lines held 1.4 GB. The reading is still
// pi's: tools/pi-end-usage.mjs gives 1010 tokens and p/m on these lines
// (with 7 fillers of each kind; the count does not change pi's answer).
func TestEntriesNoParentFindsAreNotKept(t *testing.T) {
	fillers := []string{`{}`, `0`, `[]`, `"s"`, `false`, `{"type":"label","id":""}`, `{"type":"label","id":null,"parentId":"u1"}`, `{"type":"custom","id":{},"parentId":"a1"}`, `{"type":"message","parentId":"a1","message":{"role":"user","content":"zzzz"}}`}
	const rounds = 40000
	var sb strings.Builder
	sb.WriteString(hdr + "\n" + piU1 + "\n" + piA1 + "\n")
	for range rounds {
		for _, f := range fillers {
			sb.WriteString(f + "\n")
		}
	}
	sb.WriteString(piU2 + "\n")
	in := sb.String()

	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	heap := func() int64 {
		runtime.GC()
		runtime.GC()
		metrics.Read(sample)
		return int64(sample[0].Value.Uint64())
	}
	base := heap()
	b, err := Load(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	retained := heap() - base
	runtime.KeepAlive(b)
	runtime.KeepAlive(in) // measured from base, which holds it
	if want := int64(rounds*len(fillers) + 3); b.Stats.Entries != want {
		t.Errorf("%d entries, want %d: pi keeps every one", b.Stats.Entries, want)
	}
	if end := b.End(); !end.Known || end.Tokens != 1010 || end.Model != "p/m" || b.Len != 3 {
		t.Errorf("reading %d (known %v), model %q, branch %d; pi: 1010, p/m, 3", end.Tokens, end.Known, end.Model, b.Len)
	}
	t.Logf("retained %d B for a %d B file", retained, len(in))
	if retained > int64(len(in)) {
		t.Errorf("retained %d B for a %d B file of %d entries no parentId can find: a record kept for each", retained, len(in), rounds*len(fillers))
	}
}

// heapAtEOF reads like r and, at r's end, takes the heap's live bytes: what
// a reader holds once it has seen every line, before anything it builds
// after the read.
type heapAtEOF struct {
	r    io.Reader
	live func() int64
	at   int64
}

func (h *heapAtEOF) Read(p []byte) (int, error) {
	n, err := h.r.Read(p)
	if err == io.EOF && h.at == 0 {
		h.at = h.live()
	}
	return n, err
}

// liveHeap is the heap's live bytes after a full collection.
func liveHeap() int64 {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	runtime.GC()
	runtime.GC()
	metrics.Read(sample)
	return int64(sample[0].Value.Uint64())
}

// shortestEntries is a transcript of about size bytes whose middle is the
// shortest entries a parentId can reach: "[]" lines in a version 1 file
// (pi's migration gives each an id and the previous one as parent, so
// all are on the branch), or {"id":N} lines, each its own root. Both end
// in pi's reading of 1010 tokens on p/m.
func shortestEntries(size int, v1 bool) (string, int) {
	var sb strings.Builder
	sb.Grow(size + 512)
	n := 0
	if v1 {
		sb.WriteString(`{"type":"session","id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}` + "\n" + piU1 + "\n" + piA1 + "\n")
		for sb.Len() < size {
			sb.WriteString("[]\n")
			n++
		}
	} else {
		sb.WriteString(hdr + "\n" + piU1 + "\n" + piA1 + "\n")
		for sb.Len() < size {
			sb.WriteString(`{"id":` + strconv.Itoa(n) + "}\n")
			n++
		}
	}
	sb.WriteString(piU2 + "\n")
	return sb.String(), n
}

// What a read holds is bounded by a small multiple of the file, also for a
// hand-made file of the shortest entries a parentId can reach, each of
// which the read must keep until the leaf is known. An entry's record
// cost about 180 bytes however short its line, so "[]" lines in a version
// 1 file held 60 times the file at the end of the read (the staged file's
// default cap, 8 MiB, made about 500 MB), and {"id":N} lines 16 times.
func TestShortestEntriesCostAFewTimesTheirBytes(t *testing.T) {
	const size = 4 << 20
	for _, c := range []struct {
		name string
		v1   bool
	}{{"v1 []", true}, {`{"id":N}`, false}} {
		t.Run(c.name, func(t *testing.T) {
			in, n := shortestEntries(size, c.v1)
			base := liveHeap()
			r := &heapAtEOF{r: strings.NewReader(in), live: liveHeap}
			b, err := Load(r)
			if err != nil {
				t.Fatal(err)
			}
			after := liveHeap() - base
			runtime.KeepAlive(b)
			runtime.KeepAlive(in) // measured from base, which holds it
			read := r.at - base
			if want := int64(n + 3); b.Stats.Entries != want {
				t.Errorf("%d entries, want %d", b.Stats.Entries, want)
			}
			wantLen := 3
			if c.v1 {
				wantLen = n + 3
			}
			if end := b.End(); !end.Known || end.Tokens != 1010 || end.Model != "p/m" || b.Len != wantLen {
				t.Errorf("reading %d (known %v), model %q, branch %d; pi: 1010, p/m, %d", end.Tokens, end.Known, end.Model, b.Len, wantLen)
			}
			t.Logf("%d entries in %d B: %d B held at the end of the read (%.1f×), %d B after Load (%.1f×)",
				n, len(in), read, float64(read)/float64(len(in)), after, float64(after)/float64(len(in)))
			if limit := 8 * int64(len(in)); read > limit || after > limit {
				t.Errorf("held %d B at the end of the read and %d B after it for a %d B file of %d entries: over 8 times the file", read, after, len(in), n)
			}
		})
	}
}

// An entry no parentId can find is dropped once another follows it, and
// so is what it named: a file of such entries, each naming a parent no
// entry has, holds no more than its last one's while read.
func TestParentIdsOfDroppedEntriesAreNotKept(t *testing.T) {
	const size = 4 << 20
	var sb strings.Builder
	sb.WriteString(hdr + "\n" + piU1 + "\n" + piA1 + "\n")
	n := 0
	for ; sb.Len() < size; n++ {
		fmt.Fprintf(&sb, `{"type":"compaction","parentId":"p%d","firstKeptEntryId":%d}`+"\n", n, n+1)
	}
	sb.WriteString(piU2 + "\n")
	in := sb.String()

	base := liveHeap()
	r := &heapAtEOF{r: strings.NewReader(in), live: liveHeap}
	b, err := Load(r)
	if err != nil {
		t.Fatal(err)
	}
	runtime.KeepAlive(b)
	runtime.KeepAlive(in)
	read := r.at - base
	if end := b.End(); !end.Known || end.Tokens != 1010 || end.Model != "p/m" || b.Len != 3 {
		t.Errorf("reading %d (known %v), model %q, branch %d; pi: 1010, p/m, 3", end.Tokens, end.Known, end.Model, b.Len)
	}
	t.Logf("%d entries in %d B: %d B held at the end of the read", n, len(in), read)
	if read > int64(len(in))/4 {
		t.Errorf("held %d B at the end of the read of a %d B file of %d entries no parentId finds: what each named was kept", read, len(in), n)
	}
}

// A record keeps the low halves of its line, offset and (version 1) index;
// past 4 Gi of them, which a read of a file that large reaches, the high
// halves must come back. The scan's counters are moved on here as if that
// much had been read, so that the high halves change between the entries
// on the branch.
func TestPositionsPast4Gi(t *testing.T) {
	for _, v1 := range []bool{false, true} {
		h := hdr
		if v1 {
			h = `{"type":"session","id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}`
		}
		lines := []string{h, piU1, piA1, `{}`, "", piU2, `{"type":"label","id":"l","parentId":"u2"}`}
		in := strings.Join(lines, "\n") + "\n"
		sc := NewScanner(strings.NewReader(in))
		if _, err := sc.Header(); err != nil {
			t.Fatal(err)
		}
		// piU1 is on line 2^32-1, piA1 on 2^32; piU1 starts 10 bytes
		// short of 4 GiB, piA1 past it; their indexes are 2^32-2 and -1.
		moveLines, moveBytes := int64(1<<32-3), int64(1<<32-10)-int64(len(h))-1
		moveIndex := int(moveLines)
		if int64(moveIndex) != moveLines {
			// A 32-bit int holds no index past 2^31: a branch of that
			// many entries does not fit in the address space either.
			moveIndex = 0
		}
		sc.stats.Lines += moveLines
		sc.stats.Bytes += moveBytes
		sc.index += moveIndex
		b, err := load(sc)
		if err != nil {
			t.Fatal(err)
		}
		onBranch := []int{2, 3, 6, 7} // lines: {} is dropped, the blank line skipped
		if v1 {
			onBranch = []int{2, 3, 4, 6, 7} // pi's migration gives {} an id and the next entry as child
		}
		if b.Len != len(onBranch) {
			t.Fatalf("v1 %v: branch of %d, want %d", v1, b.Len, len(onBranch))
		}
		for pos, ln := range onBranch {
			nd := b.At(pos)
			off := int64(len(strings.Join(lines[:ln-1], "\n")) + 1)
			if nd.Line != moveLines+int64(ln) || nd.Offset != moveBytes+off {
				t.Errorf("v1 %v, position %d: line %d at %d, want %d at %d", v1, pos, nd.Line, nd.Offset, moveLines+int64(ln), moveBytes+off)
			}
			if id := v1ID(moveIndex + pos + 1); v1 && nd.ID != id { // the index of the pos+1st line JSON.parse accepts
				t.Errorf("position %d: id %q, want %q", pos, nd.ID, id)
			}
		}
		if end := b.End(); !end.Known || end.Tokens != 1010 || end.Model != "p/m" {
			t.Errorf("v1 %v: reading %d (known %v), model %q; pi: 1010, p/m", v1, end.Tokens, end.Known, end.Model)
		}
	}
}
