package bench

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sessdb/internal/testfs"
)

func TestDropCacheEvicts(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	if err := os.WriteFile(p, Transcript(256<<10), 0o600); err != nil {
		t.Fatal(err)
	}
	if res, pages, err := Resident(p); err != nil || res != pages || pages == 0 {
		t.Fatalf("just written: %d of %d pages resident, %v", res, pages, err)
	}
	// fsync the one file rather than SyncFS: a test must not write back
	// the whole filesystem of a shared machine.
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	n, err := DropCache(dir)
	if errors.Is(err, errors.ErrUnsupported) && noEviction(dir) != "" {
		t.Skipf("the test's temp dir cannot be evicted: %v", err)
	}
	if err != nil || n != 1 {
		t.Fatalf("DropCache: %d files, %v", n, err)
	}
	if res, pages, err := Resident(p); err != nil || res != 0 {
		t.Errorf("after DropCache: %d of %d pages resident, %v", res, pages, err)
	}
}

// On a file system that keeps its files in memory nothing can be evicted:
// DropCache says so (errors.ErrUnsupported, so a cold benchmark skips)
// instead of returning as if it had, and leaving the benchmark to fail on
// the pages still resident (as it did with TMPDIR on /dev/shm).
func TestDropCacheOfAFileSystemInMemoryIsUnsupported(t *testing.T) {
	dir := testfs.TmpfsDir(t)
	p := filepath.Join(dir, "f")
	if err := os.WriteFile(p, Transcript(64<<10), 0o600); err != nil {
		t.Fatal(err)
	}
	n, err := DropCache(dir)
	if n != 0 || !errors.Is(err, errors.ErrUnsupported) || !strings.Contains(err.Error(), "tmpfs") {
		t.Fatalf("DropCache on tmpfs: %d files, %v; want ErrUnsupported naming tmpfs", n, err)
	}
	if res, pages, err := Resident(p); err != nil || res != pages {
		t.Fatalf("%d of %d pages resident, %v: tmpfs evicted its own file", res, pages, err)
	}
}
