package shared

import (
	"bytes"
	"context"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// The benchmarks run in a local temp dir: on NFS every fsync and every
// rename is a round trip to the server, which these figures do not have.

var sizes = []int{64 << 10, 8 << 20}

func sizeName(n int) string {
	if n >= 1<<20 {
		return fmt.Sprintf("%dMiB", n>>20)
	}
	return fmt.Sprintf("%dKiB", n>>10)
}

// BenchmarkWrite is Write: temp file, fsync, no-replace rename, dir fsync.
func BenchmarkWrite(b *testing.B) {
	for _, n := range sizes {
		b.Run(sizeName(n), func(b *testing.B) {
			dir, data := b.TempDir(), randomBytes(b, n)
			b.SetBytes(int64(n))
			for i := range b.N {
				if _, _, _, err := Write(context.Background(), dir, key, uint64(i), bytes.NewReader(data)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkFloorWriteFsync is the floor under Write: create, write, fsync.
func BenchmarkFloorWriteFsync(b *testing.B) {
	for _, n := range sizes {
		b.Run(sizeName(n), func(b *testing.B) {
			dir, data := b.TempDir(), randomBytes(b, n)
			b.SetBytes(int64(n))
			for i := range b.N {
				f, err := os.Create(filepath.Join(dir, fmt.Sprint(i)))
				if err == nil {
					_, err = f.Write(data)
				}
				if err == nil {
					err = f.Sync()
				}
				if cerr := f.Close(); err == nil {
					err = cerr
				}
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkOpenCopyVerify is what a resolve does with a generation: Open
// it, copy it into a job's file and checksum it on the way.
func BenchmarkOpenCopyVerify(b *testing.B) {
	for _, n := range sizes {
		b.Run(sizeName(n), func(b *testing.B) {
			dir, out := b.TempDir(), b.TempDir()
			name, _, want, err := Write(context.Background(), dir, key, 1, bytes.NewReader(randomBytes(b, n)))
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(n))
			b.ResetTimer()
			for i := range b.N {
				src, err := Open(dir, name)
				if err != nil {
					b.Fatal(err)
				}
				dst, err := os.Create(filepath.Join(out, fmt.Sprint(i%8)))
				if err != nil {
					b.Fatal(err)
				}
				h := crc32.New(castagnoli)
				_, err = io.Copy(io.MultiWriter(dst, h), src)
				src.Close()
				dst.Close()
				if err != nil || h.Sum32() != want {
					b.Fatalf("copy: %v, crc %08x want %08x", err, h.Sum32(), want)
				}
			}
		})
	}
}

// BenchmarkFloorCopy is a plain copy of the file, the floor under
// OpenCopyVerify.
func BenchmarkFloorCopy(b *testing.B) {
	for _, n := range sizes {
		b.Run(sizeName(n), func(b *testing.B) {
			dir := b.TempDir()
			src := filepath.Join(dir, "src")
			if err := os.WriteFile(src, randomBytes(b, n), 0o600); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(n))
			b.ResetTimer()
			for i := range b.N {
				in, err := os.Open(src)
				if err != nil {
					b.Fatal(err)
				}
				out, err := os.Create(filepath.Join(dir, fmt.Sprint(i%8)))
				if err != nil {
					b.Fatal(err)
				}
				_, err = io.Copy(out, in)
				in.Close()
				out.Close()
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
