package transcript

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sessdb/internal/bench"
)

// benchInputs are the transcripts ReadEnd is measured on: the real 2.37 MB
// one from ../shared and the synthetic 8 MiB one internal/bench promotes
// (user messages of ASCII filler, ~4 KB each).
func benchInputs(b *testing.B) []struct {
	name string
	data []byte
} {
	real, err := os.ReadFile(filepath.Join(shared(b, "pi"), "before-compaction.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	return []struct {
		name string
		data []byte
	}{
		{"real", real},
		{"synthetic8MiB", bench.Transcript(8 << 20)},
	}
}

// Run beside engage's estimate benchmark with:
//
//	go test -run '^$' -bench 'ReadEnd|Estimate|Floor' -benchmem ./store/transcript/ ./engage/
//
// The file is read into memory first, so the figure is ReadEnd's own
// throughput (MB/s of transcript), not the disk's. Each iteration must give
// the reading of the first, so a faster scan that reads differently fails
// here as well as in the tests.
func BenchmarkReadEnd(b *testing.B) {
	for _, in := range benchInputs(b) {
		b.Run(in.name, func(b *testing.B) {
			want, err := ReadEnd(bytes.NewReader(in.data))
			if err != nil || want.Invalid != nil {
				b.Fatalf("%+v, %v", want, err)
			}
			if in.name == "real" && (!want.Known || want.Tokens != 180820) {
				b.Fatalf("%+v: pi reports 180820 tokens", want)
			}
			b.SetBytes(int64(len(in.data)))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				end, err := ReadEnd(bytes.NewReader(in.data))
				if err != nil || end != want {
					b.Fatalf("%+v, %v; want %+v", end, err, want)
				}
			}
		})
	}
}

// BenchmarkFloor is the least a line reader pays on the same inputs: one
// bytes.IndexByte pass for the newlines (memory bandwidth, the data being in
// cache), and the scanner's own line reading (bufio's copy and search, with
// nothing looked at). ReadEnd's MB/s over these is the room left.
func BenchmarkFloor(b *testing.B) {
	for _, in := range benchInputs(b) {
		b.Run(in.name+"/indexbyte", func(b *testing.B) {
			b.SetBytes(int64(len(in.data)))
			for i := 0; i < b.N; i++ {
				lines := 0
				for d := in.data; len(d) > 0; lines++ {
					j := bytes.IndexByte(d, '\n')
					if j < 0 {
						break
					}
					d = d[j+1:]
				}
				if lines == 0 {
					b.Fatal("no lines")
				}
			}
		})
		b.Run(in.name+"/lines", func(b *testing.B) {
			b.SetBytes(int64(len(in.data)))
			for i := 0; i < b.N; i++ {
				s := NewScanner(bytes.NewReader(in.data))
				lines := 0
				for {
					if _, err := s.readLine(); err != nil {
						break
					}
					lines++
				}
				if lines == 0 {
					b.Fatal("no lines")
				}
			}
		})
	}
}

// BenchmarkValid compares valid with encoding/json.Valid line by line on
// the same inputs: the part of ReadEnd that replaced json.Valid.
func BenchmarkValid(b *testing.B) {
	for _, in := range benchInputs(b) {
		lines := bytes.Split(in.data, []byte{'\n'})
		for _, v := range []struct {
			name  string
			valid func([]byte) bool
		}{{"valid", valid}, {"encoding-json", json.Valid}} {
			b.Run(in.name+"/"+v.name, func(b *testing.B) {
				b.SetBytes(int64(len(in.data)))
				for i := 0; i < b.N; i++ {
					for _, l := range lines[:len(lines)-1] {
						if !v.valid(l) {
							b.Fatalf("%.100q rejected", l)
						}
					}
				}
			})
		}
	}
}

// BenchmarkReadEndShortest is ReadEnd on 8 MiB (the staged file's default
// cap) of the shortest entries a parentId can reach, the worst case of
// what a read holds per byte; B/op is close to what it holds.
func BenchmarkReadEndShortest(b *testing.B) {
	for _, v1 := range []bool{true, false} {
		name := "ids"
		if v1 {
			name = "v1"
		}
		in, _ := shortestEntries(8<<20, v1)
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(in)))
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				end, err := ReadEnd(strings.NewReader(in))
				if err != nil || end.Tokens != 1010 || end.Model != "p/m" {
					b.Fatalf("%+v, %v", end, err)
				}
			}
		})
	}
}
