package transcript

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// Run beside engage's estimate benchmark with:
//
//	go test -run '^$' -bench 'ReadEnd|Estimate' -benchmem ./store/transcript/ ./engage/
//
// The file is read into memory first, so the figure is ReadEnd's own
// throughput (MB/s of transcript), not the disk's.
func BenchmarkReadEnd(b *testing.B) {
	data, err := os.ReadFile(filepath.Join(shared(b, "pi"), "before-compaction.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		end, err := ReadEnd(bytes.NewReader(data))
		if err != nil || !end.Known || end.Tokens != 180820 {
			b.Fatalf("%+v, %v", end, err)
		}
	}
}
