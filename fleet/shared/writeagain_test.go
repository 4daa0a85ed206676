package shared

import (
	"bytes"
	"context"
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// WriteAgain writes a missing file at the name given, whole, and leaves
// nothing else; a name that is taken is ErrExists, its file as it was; a
// name that is not a transcript's is ErrInvalidName, nothing written. On
// both rename paths (renameat2, and link and unlink).
func TestWriteAgainWritesOnlyAMissingName(t *testing.T) {
	for _, linkPath := range []bool{false, true} {
		if linkPath {
			noReplace = linkUnlink
		}
		dir := t.TempDir()
		first := randomBytes(t, 10_000)
		name := write(t, dir, first)
		if err := os.Remove(filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
		size, crc, err := WriteAgain(context.Background(), dir, name, bytes.NewReader(first))
		if err != nil || size != int64(len(first)) || crc != crc32.Checksum(first, castagnoli) {
			t.Fatalf("link path %v: WriteAgain of a missing name = %d, %08x, %v", linkPath, size, crc, err)
		}
		if got, err := os.ReadFile(filepath.Join(dir, name)); err != nil || !bytes.Equal(got, first) {
			t.Errorf("link path %v: the file written again: %d bytes, %v", linkPath, len(got), err)
		}
		other := randomBytes(t, 100)
		if _, _, err := WriteAgain(context.Background(), dir, name, bytes.NewReader(other)); !errors.Is(err, ErrExists) {
			t.Errorf("link path %v: WriteAgain over a file: %v; want ErrExists", linkPath, err)
		}
		if got, _ := os.ReadFile(filepath.Join(dir, name)); !bytes.Equal(got, first) {
			t.Errorf("link path %v: a file WriteAgain found was written over", linkPath)
		}
		for _, bad := range []string{key + "/not-a-transcript", "../" + name, key} {
			if _, _, err := WriteAgain(context.Background(), dir, bad, bytes.NewReader(other)); !errors.Is(err, ErrInvalidName) {
				t.Errorf("link path %v: WriteAgain of %q: %v; want ErrInvalidName", linkPath, bad, err)
			}
		}
		if got := entries(t, filepath.Join(dir, key)); !slices.Equal(got, []string{filepath.Base(name)}) {
			t.Errorf("link path %v: the key's dir holds %v; want only %s", linkPath, got, filepath.Base(name))
		}
		noReplace = renameNoReplace
	}
}
