package store

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"sessdb/gates"
	"sessdb/internal/fsat"
)

// check --repair looks at a key, then removes the stray temps it saw under
// the key's lock: not the look's lock, so a promotion may commit between
// the two and be killed before its rename. Its temp is then the only copy
// of a generation meta.db names; the repair leaves it, with why, and the
// next resolve resumes that generation (with the temp swept, the key
// holds a record that describes no file: the committed run is lost).
func TestRepairKeepsATempCommittedAfterItsLook(t *testing.T) {
	s, root, clock := newTestStore(t, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "one")
	debris := filepath.Join(root, testKey, ".meta.db.tmp-0123456789abcdef")
	chkOldFile(t, debris, clock.now.Add(-2*time.Hour))
	rootF, err := fsat.OpenDir(root)
	if err != nil {
		t.Fatal(err)
	}
	defer rootF.Close()
	found, err := s.examine(context.Background(), rootF, testKey, nil)
	if err != nil || !slices.ContainsFunc(found, func(f Finding) bool { return f.Kind == KindStrayTemp }) {
		t.Fatalf("examine: %v, %+v; want the debris found as a stray temp", err, found)
	}
	// Between the look and the repair, a promotion commits gen 2 and is
	// killed before its rename.
	sess, jobDir := mustResolve(t, s, testKey, localJob())
	stage(t, jobDir, append(staged(t, jobDir), entryLine("two")...))
	temp := crashAfterCommit(t, s, root, sess)
	s.repair(rootF, testKey, found)
	if _, err := os.Lstat(debris); !os.IsNotExist(err) {
		t.Errorf("the debris the look found: %v; want it removed", err)
	}
	if _, err := os.Lstat(temp); err != nil {
		t.Errorf("the committed promotion's temp after the repair: %v; want it kept, it is gen 2's only copy", err)
	}
	sess, jobDir = mustResolve(t, s, testKey, localJob())
	want(t, sess, true, gates.Resumed)
	if sess.Gen() != 2 || !bytes.Contains(staged(t, jobDir), []byte("two")) {
		t.Fatalf("resumed gen %d; want gen 2, the committed promotion", sess.Gen())
	}
}
