package store

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"sessdb/db"
	"sessdb/gates"
)

// A meta.db temp that is a second name of meta.db (a creation killed
// between its link and its unlink) is swept by reap once it is stale:
// its flock is the key's lock, which the sweep holds itself (so the temp
// cannot be asked whether a creator holds it), and only the unlink of
// the temp's name is left to do; meta.db stays, with one name, and the
// key resolves as before. A dry run lists it and removes nothing. With
// such a temp taken for a creation in flight, it was left for ever.
func TestReapSweepsAStaleTempThatIsASecondNameOfMetaDB(t *testing.T) {
	s, root, clock := newTestStore(t, gates.Bounds{}) // TTL 0: no key expires, temps still go
	key := chkKey(t, s, "second-name")
	metaPath := filepath.Join(root, key, db.FileName)
	tmp := db.TempPrefix + "00000000000000ee"
	if err := os.Link(metaPath, filepath.Join(root, key, tmp)); err != nil {
		t.Fatal(err)
	}
	old := clock.now.Add(-2 * time.Hour)
	if err := os.Chtimes(metaPath, old, old); err != nil {
		t.Fatal(err)
	}
	swept := []string{key + "/" + tmp}
	dry, err := s.Reap(true)
	if err != nil || !slices.Equal(dry.Swept, swept) {
		t.Fatalf("dry run = %+v, %v; want swept %v", dry, err, swept)
	}
	if _, err := os.Lstat(filepath.Join(root, key, tmp)); err != nil {
		t.Fatalf("the dry run removed the second name: %v", err)
	}
	res, err := s.Reap(false)
	if err != nil || !slices.Equal(res.Swept, swept) || res.Kept != 1 {
		t.Fatalf("reap = %+v, %v; want swept %v, the key kept", res, err, swept)
	}
	if _, err := os.Lstat(filepath.Join(root, key, tmp)); !os.IsNotExist(err) {
		t.Errorf("the second name of meta.db after the sweep: %v; want it gone", err)
	}
	var st unix.Stat_t
	if err := unix.Lstat(metaPath, &st); err != nil || st.Nlink != 1 {
		t.Errorf("meta.db after the sweep: %d names, %v; want it there with one", st.Nlink, err)
	}
	sess, _ := mustResolve(t, s, key, localJob())
	want(t, sess, true, gates.Resumed)
}

// A reap-owned dir whose meta.db is a symbolic link holds nothing a
// writer committed to (no promotion landed in it): the next reap finishes
// it, unlinking the link, never following it, and removes the dir. Opened
// as a meta.db instead, the link failed the look, and the dir was left,
// reported as a fault.
func TestReapFinishesAReapedDirWhoseMetaDBIsALink(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	key := Key("github", "acme/reaped", "link")
	name := ReapedPrefix + key + "-0123456789abcdef"
	dir := filepath.Join(root, name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(t.TempDir(), "not-the-store's")
	if err := os.WriteFile(target, []byte("kept\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(dir, db.FileName)); err != nil {
		t.Fatal(err)
	}
	res, err := s.Reap(false)
	if err != nil || !slices.Equal(res.Finished, []string{name}) {
		t.Fatalf("reap = %+v, %v; want %s finished", res, err, name)
	}
	if _, err := os.Lstat(dir); !os.IsNotExist(err) {
		t.Errorf("the reap-owned dir after the reap: %v; want it gone", err)
	}
	if got, err := os.ReadFile(target); err != nil || string(got) != "kept\n" {
		t.Errorf("the link's target after the reap: %q, %v; want it untouched", got, err)
	}
}
