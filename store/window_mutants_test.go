package store

import (
	"os"
	"path/filepath"
	"testing"

	"sessdb/db"
	"sessdb/internal/fsat"
)

// hardLinkedTemp makes, in a fresh dir, a meta.db temp that is a hard link
// of a file outside it (two names, no flock: no creation at work), and
// returns the dir open and the temp's name.
func hardLinkedTemp(t *testing.T) (kd *os.File, tmp string) {
	t.Helper()
	dir := t.TempDir()
	return openDirT(t, dir), linkTempIn(t, dir)
}

// linkTempIn makes in dir a meta.db temp that is a hard link of a file
// outside it, and returns its name.
func linkTempIn(t *testing.T, dir string) string {
	t.Helper()
	outside := filepath.Join(t.TempDir(), "copy")
	if err := os.WriteFile(outside, []byte("not a db\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tmp := db.TempPrefix + "00000000000000af"
	if err := os.Link(outside, filepath.Join(dir, tmp)); err != nil {
		t.Fatal(err)
	}
	return tmp
}

// A name found with two names and no flock held, removed after
// creatingDB asked its flock and before its last look (a repair's removal
// of a stray temp, which holds only a shared flock), is gone since it was
// found: not a hard link to report, as a name removed since the listing
// is not. With the last lstat's ENOENT taken for "still two names" (the
// twenty-third session's other surviving mutant), a link problem was
// reported of a name no longer there.
func TestCreatingDBOfANameGoneAfterItsFlockWasAsked(t *testing.T) {
	kd, tmp := hardLinkedTemp(t)
	asked := 0
	testHookCreatingDBAsked = func(name string) {
		asked++
		if err := fsat.UnlinkAt(kd, name); err != nil {
			t.Error(err)
		}
	}
	t.Cleanup(func() { testHookCreatingDBAsked = nil })
	if !creatingDB(kd, tmp) {
		t.Error("creatingDB of a name removed after its flock was asked = false (a hard link); want true: gone since it was found")
	}
	if asked != 1 {
		t.Fatalf("the name was removed %d times between the question and the last look; want once", asked)
	}
}
