package store

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sessdb/db"
	"sessdb/gates"
)

// copyWithHardLinks copies the tree at from to to as cp -al does: every
// directory made anew, every file a second name of the same file.
func copyWithHardLinks(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, path)
		if d.IsDir() {
			return os.Mkdir(filepath.Join(to, rel), 0o700)
		}
		return os.Link(path, filepath.Join(to, rel))
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A copy of the root made with hard links (cp -al, rsync --link-dest) is a
// backup: promotions in the live root after it never change what the copy
// resumes, though meta.db, unlike a transcript, is a file that changes.
func TestACopyOfTheRootMadeWithHardLinksKeepsItsConversation(t *testing.T) {
	s, root, clock := newTestStore(t, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "first")
	backup := filepath.Join(t.TempDir(), "backup")
	copyWithHardLinks(t, root, backup)
	kept := readCanonical(t, backup, testKey)

	runJob(t, s, testKey, localJob(), PromoteRequest{}, "second")
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "third")

	b, err := New(backup, Options{Now: clock.Now, LockTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	sess, jobDir := mustResolve(t, b, testKey, localJob())
	want(t, sess, true, gates.Resumed)
	if got := staged(t, jobDir); !bytes.Equal(got, kept) {
		t.Fatalf("the copy resumed %d bytes, want the %d it was made with", len(got), len(kept))
	}
	sess, _ = mustResolve(t, s, testKey, localJob())
	if want := int64(len(readCanonical(t, root, testKey))); !sess.Resume || sess.Bytes != want {
		t.Fatalf("the live root resolves %+v, want its third generation's %d bytes", sess, want)
	}
}

// check --repair on a key whose meta.db has a name outside the root and a
// stray temp: the repair's writer gives meta.db a file of its own, which
// is no problem for the checks after the repair (bbolt's among them), and
// the name outside stays as it was.
func TestRepairBesideAHardLinkedMetaDB(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	key := chkKey(t, s, "linked")
	outside := filepath.Join(t.TempDir(), "meta.db")
	if err := os.Link(chkDB(root, key), outside); err != nil {
		t.Fatal(err)
	}
	was, err := os.ReadFile(outside)
	if err != nil {
		t.Fatal(err)
	}
	chkOldFile(t, filepath.Join(root, key, tmpPrefix+"00000000000000ab"), s.opts.Now())

	found, sum := chkRun(t, s, true)
	if f := chkFind(found, key+"/"+tmpPrefix+"00000000000000ab", KindStrayTemp); f == nil || !f.Repaired {
		t.Errorf("stray temp: %+v", f)
	}
	if f := chkFind(found, key+"/"+db.FileName, KindLink); f == nil || f.Remains || !strings.Contains(f.Repair, "a file of its own") {
		t.Errorf("meta.db's second name: %+v, want reported, gone after the repair, and its repair line saying so", f)
	}
	for _, f := range found {
		if f.Kind != KindLink && f.Remains {
			t.Errorf("remains after the repair: %+v", f)
		}
	}
	if sum.Remaining != 0 {
		t.Errorf("remaining %d, want 0: %+v", sum.Remaining, found)
	}
	if now, err := os.ReadFile(outside); err != nil || !bytes.Equal(now, was) {
		t.Errorf("the name outside the root changed: %v", err)
	}
	found, _ = chkRun(t, s, false)
	if len(found) != 0 {
		t.Errorf("a second check finds %+v", found)
	}
}
