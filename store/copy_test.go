package store

import (
	"bytes"
	"context"
	"hash/crc32"
	"math/rand"
	"os"
	"path/filepath"
	"testing"
)

// copyCounted copies the file's bytes and returns their CRC32C, for sizes
// around the point where it takes the larger buffer and around that
// buffer's bounds, and a limit below the file's size copies only the limit.
func TestCopyCounted(t *testing.T) {
	dir := t.TempDir()
	for _, size := range []int{0, 1, bigCopy - 1, bigCopy, bigCopy + 1, 4*bigCopy - 1, 4 * bigCopy} {
		data := make([]byte, size)
		rand.New(rand.NewSource(int64(size))).Read(data)
		p := filepath.Join(dir, "src")
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		src, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, limit := range []int64{int64(size) + 1, max(0, int64(size)-7)} {
			var dst bytes.Buffer
			n, sum, err := copyCounted(context.Background(), &dst, src, limit)
			want := data[:min(int64(size), limit)]
			if err != nil || n != int64(len(want)) || !bytes.Equal(dst.Bytes(), want) || sum != crc32.Checksum(want, castagnoli) {
				t.Fatalf("size %d limit %d: copied %d (%v), sum ok %v, bytes ok %v", size, limit, n, err,
					sum == crc32.Checksum(want, castagnoli), bytes.Equal(dst.Bytes(), want))
			}
		}
		src.Close()
	}
}

// A transcript cut short out of band after resolve learned its size (the
// limit) ends the copy short, without an error, for the identity check to
// refuse it.
func TestCopyOfAFileCutShort(t *testing.T) {
	p := filepath.Join(t.TempDir(), "src")
	data := bytes.Repeat([]byte("0123456789abcdef"), 2*bigCopy/16)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	src, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if err := os.Truncate(p, bigCopy); err != nil {
		t.Fatal(err)
	}
	var dst bytes.Buffer
	n, sum, err := copyCounted(context.Background(), &dst, src, int64(len(data))+1)
	if err != nil || n != bigCopy || !bytes.Equal(dst.Bytes(), data[:bigCopy]) || sum != crc32.Checksum(data[:bigCopy], castagnoli) {
		t.Fatalf("copied %d bytes (%d written, %v) of a file cut to %d", n, dst.Len(), err, bigCopy)
	}
}
