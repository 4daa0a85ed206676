package bench

import (
	"os"
	"path/filepath"
	"testing"
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
	if n, err := DropCache(dir); err != nil || n != 1 {
		t.Fatalf("DropCache: %d files, %v", n, err)
	}
	if res, pages, err := Resident(p); err != nil || res != 0 {
		t.Errorf("after DropCache: %d of %d pages resident, %v", res, pages, err)
	}
}
