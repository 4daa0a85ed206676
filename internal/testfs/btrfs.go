package testfs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// BtrfsEnv names the variable that, set to 1 (as .ci/long sets it once
// it has installed btrfs-progs), makes a test that cannot have a btrfs
// fail instead of skip.
const BtrfsEnv = "SESSDB_BTRFS"

// Fill writes into dir until its file system refuses more data (ENOSPC,
// or EDQUOT): one file in 1 MiB writes, then files of 4 KiB, which take
// what room is left in part-used blocks.
func Fill(t testing.TB, dir string) {
	t.Helper()
	f, err := os.Create(filepath.Join(dir, "fill"))
	if err != nil {
		t.Fatal(err)
	}
	for buf := make([]byte, 1<<20); err == nil; {
		_, err = f.Write(buf)
	}
	if err = errors.Join(err, f.Close()); !full(err) {
		t.Fatalf("filling %s: %v", dir, err)
	}
	fillFiles(t, dir, 4096)
}

// FillMetadata makes empty files in dir until its file system refuses
// more: after Fill, a btrfs's metadata full too, where a rename or a
// directory's fsync needs room that an unlink does not.
func FillMetadata(t testing.TB, dir string) {
	t.Helper()
	fillFiles(t, dir, 0)
}

func fillFiles(t testing.TB, dir string, size int) {
	t.Helper()
	for i := 0; ; i++ {
		if i == 1<<20 {
			t.Fatalf("filling %s: %d files of %d bytes, and still not full", dir, i, size)
		}
		err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("fill-%d-%d", size, i)), make([]byte, size), 0o600)
		if full(err) {
			return
		}
		if err != nil {
			t.Fatalf("filling %s: %v", dir, err)
		}
	}
}

// full is fsat.IsNoSpace, which testfs cannot import: fsat's own tests
// import testfs.
func full(err error) bool { return errors.Is(err, unix.ENOSPC) || errors.Is(err, unix.EDQUOT) }
