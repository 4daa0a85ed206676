package transcript

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// FuzzLoad gives Load (the branch pi resumes on, behind ReadEnd, a
// promotion's reading and the engage estimate) any bytes a container
// could leave as its transcript. It must agree with one plain Scanner
// pass over the same bytes (header, version, line counts, the error), add
// only ErrCycle of its own, and give the same answer twice. A branch it
// returns is a path of distinct entries within the file, from a root to
// the leaf, the last entry, no longer than the entries read.
func FuzzLoad(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "end", "*.jsonl"))
	for _, p := range files {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	msg := func(id, parent string) string {
		return `{"type":"message","id":"` + id + `","parentId":"` + parent + `","message":{"role":"user","content":"hi"}}`
	}
	f.Add([]byte(hdr + "\n" + msg("a", "b") + "\n" + msg("b", "a") + "\n"))
	f.Add([]byte(hdr + "\n" + msg("a", "c") + "\n" + msg("b", "a") + "\n" + msg("c", "b") + "\n"))
	f.Add([]byte(hdr + "\n" + msg("a", "") + "\n" + msg("a", "a") + "\n"))
	f.Add([]byte(hdr + "\n" + `{"type":"message","id":1,"parentId":1,"message":{"role":"user","content":"x"}}` + "\n"))
	f.Add([]byte(hdr + "\n" + `{"type":"compaction","id":"c","parentId":"a","firstKeptEntryId":"a","summary":"s","tokensBefore":5}` + "\n" + msg("a", "") + "\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := Load(bytes.NewReader(data))

		sc := NewScanner(bytes.NewReader(data))
		entries := int64(0)
		for sc.Next() {
			entries++
		}
		switch {
		case sc.Err() != nil:
			if err == nil || err.Error() != sc.Err().Error() {
				t.Fatalf("Load: %v; the scan: %v", err, sc.Err())
			}
		case err != nil && !errors.Is(err, ErrCycle):
			t.Fatalf("Load: %v, where the scan read every line", err)
		}

		again, err2 := Load(bytes.NewReader(data))
		if (err == nil) != (err2 == nil) || err != nil && err.Error() != err2.Error() || !sameValue(reflect.ValueOf(b), reflect.ValueOf(again)) {
			t.Fatalf("two Loads of the same bytes differ: %v / %v", err, err2)
		}
		if err != nil {
			if b != nil {
				t.Fatalf("Load: %v with a branch", err)
			}
			return
		}

		h, _ := sc.Header()
		if b.Header != h || b.Version != sc.Version() || b.Stats != sc.Stats() {
			t.Fatalf("Load read header %+v v%d %+v; the scan %+v v%d %+v", b.Header, b.Version, b.Stats, h, sc.Version(), sc.Stats())
		}
		if int64(b.Len) > entries || b.Len < 0 {
			t.Fatalf("a branch of %d entries from %d read", b.Len, entries)
		}
		lines := make(map[int64]bool, b.Len)
		for pos := range b.Len {
			n := b.At(pos)
			if n.Line < 2 || n.Line > b.Stats.Lines || n.Offset < 0 || n.Offset >= int64(len(data)) || lines[n.Line] {
				t.Fatalf("branch position %d: line %d at offset %d (of %d lines, %d bytes; repeated %v)",
					pos, n.Line, n.Offset, b.Stats.Lines, len(data), lines[n.Line])
			}
			lines[n.Line] = true
			// The offset is where the entry's line begins.
			if n.Offset > 0 && data[n.Offset-1] != '\n' {
				t.Fatalf("branch position %d: offset %d is not the start of a line", pos, n.Offset)
			}
			if got := int64(bytes.Count(data[:n.Offset], []byte{'\n'})) + 1; got != n.Line {
				t.Fatalf("branch position %d: line %d, but offset %d starts line %d", pos, n.Line, n.Offset, got)
			}
		}
		if b.Len > 0 && b.At(b.Len-1).ID != b.Leaf {
			t.Fatalf("the branch ends at %q, not the leaf %q", b.At(b.Len-1).ID, b.Leaf)
		}
	})
}
