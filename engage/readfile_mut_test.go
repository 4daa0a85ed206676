package engage

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A transcript that does not exist is an error that says so (fs.ErrNotExist,
// naming the path), not a read of nothing: the caller tells a missing file
// from a damaged one by it.
func TestReadFileMissingIsNotExist(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gone.jsonl")
	tr, err := ReadFile(path)
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), path) || tr != nil {
		t.Fatalf("ReadFile(missing) = %+v, %v; want fs.ErrNotExist naming the path", tr, err)
	}
}

// A rewrite that shrinks the file under the read is ErrChanged even when
// the file's first bytes (all the header compare sees) are unchanged: the
// size is compared on its own, so a file cut short past its first page is
// not read as the whole transcript.
func TestReadFileShrunkPastItsFirstBytesIsChanged(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"type":"session","version":3,"id":"s","timestamp":"2026-11-01T00:00:00.000Z","cwd":"/w"}` + "\n")
	parent := "null"
	for i := 0; b.Len() < 3*4096; i++ {
		id := "e" + strings.Repeat("x", 3) + string(rune('a'+i%26)) + strings.Repeat("y", i/26)
		b.WriteString(`{"type":"message","id":"` + id + `","parentId":` + parent + `,"message":{"role":"user","content":"hello there"}}` + "\n")
		parent = `"` + id + `"`
	}
	file := filepath.Join(t.TempDir(), "t.jsonl")
	if err := os.WriteFile(file, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	defer func() { readFileHook = nil }()
	readFileHook = func() {
		if err := os.Truncate(file, 2*4096); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := ReadFile(file); !errors.Is(err, ErrChanged) {
		t.Fatalf("a file cut to 8192 of %d bytes while read: %v; want ErrChanged", b.Len(), err)
	}
}
