// Package bench holds sessdb's benchmarks against the legacy store (issue
// 7) and the helpers they share: transcripts of a chosen size, allocated
// bytes, and a page-cache drop for the cold runs (Linux only: elsewhere
// the cold benchmarks are skipped). The benchmarks are in
// the _test files; the baseline protocols are in internal/bench/legacy; the
// program that runs the set and writes the ratios table is
// internal/bench/report. docs/PERFORMANCE.md has the results.
//
// Nothing here runs in `go test ./...` beyond a few cheap checks of the
// helpers: every benchmark needs -bench, and the 10,000-key fixtures of the
// dump and migrate benchmarks are built on first use inside a benchmark.
//
// Every target is a ratio of two benchmarks measured in the same process
// run, never an absolute time: the machines are shared and noisy.
package bench

import (
	"bytes"
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// Transcript returns a pi transcript of exactly size bytes: a v3 session
// header, then user messages of filler text, every line ending in a
// newline. A size too small for the header and one message is rounded up
// to that.
func Transcript(size int) []byte {
	var b bytes.Buffer
	b.WriteString(`{"type":"session","version":3,"id":"0b9c3f0e-1111-4a2b-8c3d-123456789abc","timestamp":"2026-11-01T12:00:00.000Z","cwd":"/workspace"}` + "\n")
	const open = `{"type":"message","id":"%08x","parentId":null,"timestamp":"2026-11-01T12:00:00.000Z","message":{"role":"user","content":"`
	const close = `"}}` + "\n"
	const line = 4000 // filler per message, about a real message's size
	filler := strings.Repeat("lorem ipsum ", line/12+1)
	for i := 0; b.Len() < size; i++ {
		head := fmt.Sprintf(open, i)
		fill := size - b.Len() - len(head) - len(close)
		if fill > 2*line {
			fill = line // else the last message takes what is left
		}
		fill = max(fill, 1)
		b.WriteString(head)
		b.WriteString(strings.Repeat(filler, fill/len(filler)+1)[:fill])
		b.WriteString(close)
	}
	return b.Bytes()
}

// Allocated is the sum of st_blocks*512 over paths (lstat, no link
// followed): what the files take on disk, holes excluded and partial
// blocks rounded up, as du reports it.
func Allocated(paths ...string) (int64, error) {
	var sum int64
	for _, p := range paths {
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			return 0, &os.PathError{Op: "lstat", Path: p, Err: err}
		}
		sum += st.Blocks * 512
	}
	return sum, nil
}

// CopySparse copies the file src to dst, leaving a hole wherever src has a
// 4 KiB block of zeros: bbolt grows meta.db by truncation and writes only
// the pages it uses, so a fixture copied densely would read and allocate
// blocks the real file does not have.
func CopySparse(src, dst string, perm os.FileMode) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	const block = 4096
	zero := make([]byte, block)
	for off := 0; off < len(data); off += block {
		chunk := data[off:min(off+block, len(data))]
		if bytes.Equal(chunk, zero[:len(chunk)]) {
			continue
		}
		if _, err := f.WriteAt(chunk, int64(off)); err != nil {
			f.Close()
			return err
		}
	}
	if err := f.Truncate(int64(len(data))); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
