package store

import (
	"bytes"
	"hash/crc32"
	"math/rand"
	"os"
	"path/filepath"
	"testing"
)

// A transcript past mapThreshold is copied through a mapping: the bytes and
// the CRC32C are those of the file, for sizes around the chunk bounds, and
// a limit below the file's size copies only the limit.
func TestCopyCountedMapped(t *testing.T) {
	dir := t.TempDir()
	for _, size := range []int{mapThreshold, mapThreshold + 1, 3*mapChunk + mapThreshold - 1, 4 * mapThreshold} {
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
		for _, limit := range []int64{int64(size) + 1, int64(size) - 7} {
			var dst bytes.Buffer
			n, sum, err := copyCounted(&dst, src, limit)
			want := data[:min(int64(size), limit)]
			if err != nil || n != int64(len(want)) || !bytes.Equal(dst.Bytes(), want) || sum != crc32.Checksum(want, castagnoli) {
				t.Fatalf("size %d limit %d: copied %d (%v), sum ok %v, bytes ok %v", size, limit, n, err,
					sum == crc32.Checksum(want, castagnoli), bytes.Equal(dst.Bytes(), want))
			}
		}
		src.Close()
	}
}

// A transcript cut short under the mapping (out of band) makes reading
// past its new end fault: the copy ends short, without an error and without
// killing the process, for the identity check to refuse it.
func TestCopyMappedFileCutShort(t *testing.T) {
	p := filepath.Join(t.TempDir(), "src")
	data := bytes.Repeat([]byte("0123456789abcdef"), 2*mapThreshold/16)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	src, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if err := os.Truncate(p, mapThreshold); err != nil { // as if cut after the size was read
		t.Fatal(err)
	}
	var dst bytes.Buffer
	n, _, err, mapped := copyMapped(&dst, src, int64(len(data)))
	if !mapped || err != nil {
		t.Fatalf("mapped %v, err %v", mapped, err)
	}
	if n > mapThreshold || n != int64(dst.Len()) || !bytes.Equal(dst.Bytes(), data[:n]) {
		t.Fatalf("copied %d bytes (%d written) of a file cut to %d", n, dst.Len(), mapThreshold)
	}
}
