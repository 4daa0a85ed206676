package bench

import (
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// copyCRC is a way to copy a transcript into a staged file while learning
// its size and CRC32C, which is what a resolve (and a promotion's temp)
// needs. Each is timed from a new destination's open to its close, the
// source already open.
type copyCRC struct {
	name string
	copy func(dst, src *os.File, size int64) (int64, uint32, error)
}

var copyVariants = []copyCRC{
	// What store.copyCounted does below 1 MiB: io.Copy into an
	// io.MultiWriter of the file and the hash, from an io.SectionReader.
	// Neither side has ReadFrom/WriteTo, so io.Copy uses its 32 KiB
	// buffer: a pread and a write per 32 KiB.
	{"multiwriter-32KiB", func(dst, src *os.File, size int64) (int64, uint32, error) {
		h := crc32.New(castagnoli)
		n, err := io.Copy(io.MultiWriter(dst, h), io.NewSectionReader(src, 0, size+1))
		return n, h.Sum32(), err
	}},
	// The same loop with a 1 MiB buffer: fewer system calls for a large
	// transcript, the same bytes moved. What store.copyCounted does from
	// 1 MiB on.
	{"buffer-1MiB", func(dst, src *os.File, size int64) (int64, uint32, error) {
		h := crc32.New(castagnoli)
		buf := make([]byte, 1<<20)
		n, err := io.CopyBuffer(io.MultiWriter(dst, h), io.NewSectionReader(src, 0, size+1), buf)
		return n, h.Sum32(), err
	}},
	// copy_file_range in the kernel, then the CRC over the copy as it now
	// sits in the page cache: the check covers what was staged.
	{"cfr-then-crc", func(dst, src *os.File, size int64) (int64, uint32, error) {
		n, err := io.Copy(dst, io.NewSectionReader(src, 0, size+1))
		if err != nil {
			return n, 0, err
		}
		h := crc32.New(castagnoli)
		if _, err := io.CopyBuffer(h, io.NewSectionReader(dst, 0, n), make([]byte, 256<<10)); err != nil {
			return n, 0, err
		}
		return n, h.Sum32(), nil
	}},
	// mmap the source, CRC it and write it from the mapping: one copy of the
	// bytes instead of two.
	{"mmap", func(dst, src *os.File, size int64) (int64, uint32, error) {
		if size == 0 {
			return 0, 0, nil
		}
		m, err := unix.Mmap(int(src.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
		if err != nil {
			return 0, 0, err
		}
		defer unix.Munmap(m)
		sum := crc32.Checksum(m, castagnoli)
		n, err := dst.Write(m)
		return int64(n), sum, err
	}},
}

// BenchmarkCopyCRC compares ways of staging a transcript with its CRC32C:
// the evidence behind the resolve copy suggested in docs/PERFORMANCE.md. It
// is not one of the ratios.
func BenchmarkCopyCRC(b *testing.B) {
	for _, sz := range sizes {
		data := Transcript(sz.bytes)
		want := crc32.Checksum(data, castagnoli)
		for _, v := range copyVariants {
			b.Run(fmt.Sprintf("%s/%s", sz.name, v.name), func(b *testing.B) {
				dir := workDir(b)
				srcPath := filepath.Join(dir, "src.jsonl")
				writeAsPromoteDoes(b, srcPath, data)
				src, err := os.Open(srcPath)
				if err != nil {
					b.Fatal(err)
				}
				defer src.Close()
				next := freshDirs(b)
				b.SetBytes(int64(len(data)))
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					dst, err := os.OpenFile(filepath.Join(next(), "dst.jsonl"), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
					if err != nil {
						b.Fatal(err)
					}
					n, sum, err := v.copy(dst, src, int64(len(data)))
					if cerr := dst.Close(); err == nil {
						err = cerr
					}
					if err != nil || n != int64(len(data)) || sum != want {
						b.Fatalf("%s: %d bytes, crc %08x (want %d, %08x): %v", v.name, n, sum, len(data), want, err)
					}
				}
			})
		}
	}
}

// writeAsPromoteDoes writes data at path as a promotion writes a
// transcript: in io.Copy's 32 KiB writes to a temp, fsynced, then
// renamed. The page cache holds such a file otherwise than one written in
// one call, and a copy's cost depends on it: through a mapping, 8 MiB
// written whole copied in 1.3 to 1.9 ms here, written as promote writes
// it in 6.7 to 7.4 ms (docs/PERFORMANCE.md, 2026-12-05).
func writeAsPromoteDoes(b *testing.B, path string, data []byte) {
	b.Helper()
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		b.Fatal(err)
	}
	for rest := data; len(rest) > 0 && err == nil; rest = rest[min(len(rest), 32<<10):] {
		_, err = f.Write(rest[:min(len(rest), 32<<10)])
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		b.Fatal(err)
	}
}
