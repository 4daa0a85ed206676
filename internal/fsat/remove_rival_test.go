package fsat

import (
	"os"
	"path/filepath"
	"testing"

	"sessdb/internal/faults"
)

// TestRemoveOfADirARivalRemovedFirstIsNoError: Remove's doc says nothing
// at the name is not an error (a rival got there first). A directory the
// rival removed between Remove's unlink (EISDIR) and its look before the
// rmdir kept the unlink's EISDIR: a reap whose reap-owned dir another reap
// finished under it reported the key it had removed as failed ("remove
// .reaped-…: is a directory"). TestChaos in package store found it.
func TestRemoveOfADirARivalRemovedFirstIsNoError(t *testing.T) {
	base := t.TempDir()
	if err := os.Mkdir(filepath.Join(base, "d"), 0o700); err != nil {
		t.Fatal(err)
	}
	dir, err := OpenDir(base)
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	faults.Set(func(p faults.Point) error {
		if p == faults.FsatRemoveBeforeDirLook {
			os.Remove(filepath.Join(base, "d")) // the rival
		}
		return nil
	})
	t.Cleanup(func() { faults.Set(nil) })
	if err := Remove(dir, "d"); err != nil {
		t.Errorf("Remove of a dir a rival removed first = %v; want nil", err)
	}
}
