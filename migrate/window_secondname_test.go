package migrate

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"sessdb/db"
)

// A meta.db temp that is a second name of meta.db (a creation killed
// between its link and its unlink) is swept by a run's cleanup under the
// key's exclusive lock: its flock is that lock, held by the run itself, so it
// cannot be asked, and the unlink of the temp's name is all that is left
// to do; meta.db stays, with one name. With such a temp taken for a
// creation in flight, every run left it.
func TestTheSweepRemovesATempThatIsASecondNameOfMetaDB(t *testing.T) {
	root, keys := newCorpus(t)
	key := keyNamed(keys, "plain")
	migrate(t, root, false, testOpts())
	metaPath := filepath.Join(root, key, db.FileName)
	name := db.TempPrefix + "00000000000000f3"
	must(t, os.Link(metaPath, filepath.Join(root, key, name)))
	old := time.Now().Add(-2 * tempGrace)
	must(t, os.Chtimes(metaPath, old, old))
	// A legacy sidecar beside meta.db: the run works under the key's
	// exclusive lock (a finished key is read under the shared one).
	must(t, os.WriteFile(filepath.Join(root, key, "pi-version"), []byte("0.1.0\n"), 0o600))
	got, _ := migrate(t, root, false, testOpts())
	if r := got[key]; !slices.Contains(r.Removed, name) {
		t.Errorf("removed %v; want the second name %s among them", r.Removed, name)
	}
	if _, err := os.Lstat(filepath.Join(root, key, name)); !os.IsNotExist(err) {
		t.Errorf("the second name of meta.db after the run: %v; want it gone", err)
	}
	var st unix.Stat_t
	if err := unix.Lstat(metaPath, &st); err != nil || st.Nlink != 1 {
		t.Errorf("meta.db after the run: %d names, %v; want it there with one", st.Nlink, err)
	}
}

// A meta.db temp changed within tempGrace and not flocked is left by a
// run's sweep, with pages in it or not: an older sessdb's creation (a
// rolling upgrade) let go of its temp's flock after bbolt's init, and
// then fsynced and linked it; removed then, that creation failed.
func TestTheSweepLeavesAYoungUnflockedMetaDBTemp(t *testing.T) {
	root, keys := newCorpus(t)
	key := keyNamed(keys, "plain")
	name := db.TempPrefix + "00000000000000f4"
	p := filepath.Join(root, key, name)
	must(t, os.WriteFile(p, make([]byte, 4096), 0o600)) // bbolt's first page, as an init leaves it
	got, _ := migrate(t, root, false, testOpts())
	if r := got[key]; slices.Contains(r.Removed, name) {
		t.Errorf("removed %v; want the young temp left", r.Removed)
	}
	if _, err := os.Lstat(p); err != nil {
		t.Errorf("the young temp after the run: %v; want it left", err)
	}
}
