// Package bench holds sessdb's benchmarks against the legacy store (issue
// 7) and the helpers they share: transcripts of a chosen size (here, for
// other packages' benchmarks too), allocated bytes, and a page-cache drop
// for the cold runs (Linux only: elsewhere the cold benchmarks are
// skipped). The benchmarks and the helpers only they use are in the
// _test files, the legacy store's baseline protocols in legacy_*_test.go;
// the program that runs the set and writes the ratios table is
// internal/bench/report. docs/PERFORMANCE.md has the results.
//
// Nothing here runs in `go test ./...` beyond cheap tests: of the helpers,
// of the legacy baseline (it writes what sessdb's legacy readers read),
// and of the setup the sessdb benchmarks start from. Every benchmark needs
// -bench, and the 10,000-key fixtures of the dump and migrate benchmarks
// are built on first use inside a benchmark.
//
// Every target is a ratio of two benchmarks measured in the same process
// run, never an absolute time: the machines are shared and noisy.
package bench

import (
	"bytes"
	"fmt"
	"strings"
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
