package migrate

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"sessdb/internal/fsat"
)

// A migration writes in a key dir (its open a meta.db for its lock, its
// first write an older file's schema migration) only while the dir is known to be at the key's
// name: the look that asks (fsat.Moved) failing with an I/O error refuses
// the write with that error. It said "not moved" then, and the write went
// ahead in a dir that may have been moved aside (a quarantine's, which
// promises nothing in it changes).
func TestMigrationWritesNothingWhereItCannotTellTheDirIsAtItsKey(t *testing.T) {
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, "k"), 0o700); err != nil {
		t.Fatal(err)
	}
	kd, err := fsat.OpenDir(filepath.Join(root, "k"))
	if err != nil {
		t.Fatal(err)
	}
	defer kd.Close()
	// A root whose look fails: every stat of a name in it is ENOTDIR.
	notDir, err := os.Create(filepath.Join(root, "file"))
	if err != nil {
		t.Fatal(err)
	}
	defer notDir.Close()
	m := &migrator{root: root, rootDir: notDir}
	if err := m.writerOptions(kd, "k").BeforeWrite(); !errors.Is(err, unix.ENOTDIR) {
		t.Fatalf("the write's guard with the look failing: %v, want the look's ENOTDIR", err)
	}
	if knownMoved(notDir, "k", kd) {
		t.Fatal("a look that failed is taken for a dir moved aside (a vanished skip hides the plan's error)")
	}
}
