package store

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"sessdb/gates"
)

// Reap sweeps stray temps older than an hour from the keys it keeps, and
// never the temp a pending record names (that promotion's only copy).
func TestReapSweepsStaleTemps(t *testing.T) {
	s, root, clock := newTestStore(t, gates.Bounds{}) // TTL 0: no key expires, temps still go
	kept := chkKey(t, s, "kept")
	legacyKey := Key("github", "a/b", "legacy")
	writeLegacy(t, root, legacyKey, map[string]string{TranscriptName: string(transcriptBytes(clock.now))})
	pending := chkKey(t, s, "pending")
	for _, c := range chkDamages {
		if c.kind == KindPendingPromotion {
			c.damage(t, s, root, pending)
		}
	}
	var pendingTmp string
	if p := sidecarsOf(t, root, pending).Pending; p != nil {
		pendingTmp = p.Tmp
	} else {
		t.Fatal("no pending promotion to spare")
	}
	old, young := clock.now.Add(-2*time.Hour), clock.now.Add(-10*time.Minute)
	chkOldFile(t, filepath.Join(root, kept, ".current.jsonl.tmp-00000000000000aa"), old)
	chkOldFile(t, filepath.Join(root, kept, ".current.jsonl.tmp-00000000000000bb"), young)
	chkOldFile(t, filepath.Join(root, legacyKey, ".meta.db.tmp-00000000000000cc"), old)
	os.Chtimes(filepath.Join(root, pending, pendingTmp), old, old)
	os.Symlink("/etc/passwd", filepath.Join(root, kept, ".current.jsonl.tmp-00000000000000dd"))

	wantSwept := []string{kept + "/.current.jsonl.tmp-00000000000000aa", legacyKey + "/.meta.db.tmp-00000000000000cc"}
	slices.Sort(wantSwept)
	before := treeState(t, root)
	dry, err := s.Reap(true)
	if err != nil || !slices.Equal(dry.Swept, wantSwept) || len(dry.Removed) != 0 {
		t.Fatalf("dry run = %+v, %v; want swept %v", dry, err, wantSwept)
	}
	if treeState(t, root) != before {
		t.Fatal("a dry run changed the tree")
	}
	res, err := s.ReapWith(context.Background(), ReapOptions{Workers: 2})
	if err != nil || !slices.Equal(res.Swept, wantSwept) || res.Kept != 3 || len(res.Skipped) != 0 {
		t.Fatalf("reap = %+v, %v; want swept %v", res, err, wantSwept)
	}
	for _, p := range []string{kept + "/.current.jsonl.tmp-00000000000000bb", pending + "/" + pendingTmp, kept + "/.current.jsonl.tmp-00000000000000dd"} {
		if _, err := os.Lstat(filepath.Join(root, p)); err != nil {
			t.Errorf("reap removed %s: %v", p, err)
		}
	}
	if _, err := os.Lstat(filepath.Join(root, legacyKey, "meta.db")); !os.IsNotExist(err) {
		t.Error("reap made a meta.db in a legacy key to lock it")
	}
	// The spared temp still rolls forward.
	if _, err := s.RollForward(pending); err != nil {
		t.Fatal(err)
	}
	sess, _ := mustResolve(t, s, pending, localJob())
	want(t, sess, true, gates.Resumed)
}

// An interrupted reap reports what it did so far, in order.
func TestReapStopsOnCancel(t *testing.T) {
	s, root, clock := newTestStore(t, gates.Bounds{TTL: 24 * time.Hour})
	for i := range 40 {
		k := Key("github", "a/b", string(rune('A'+i)))
		writeLegacy(t, root, k, map[string]string{TranscriptName: string(transcriptBytes(clock.now))})
		old := clock.now.Add(-48 * time.Hour)
		os.Chtimes(filepath.Join(root, k, TranscriptName), old, old)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := 0
	res, err := s.ReapWith(ctx, ReapOptions{Workers: 1, Progress: func(n, total int) {
		if done = n; n == 5 {
			cancel()
		}
	}})
	if !errors.Is(err, context.Canceled) || len(res.Removed) < 5 || len(res.Removed) >= 40 || len(res.Removed) != done {
		t.Fatalf("cancelled reap: removed %d (progress %d), %v", len(res.Removed), done, err)
	}
	if !slices.IsSorted(res.Removed) {
		t.Fatalf("removed out of order: %v", res.Removed)
	}
	left, _ := os.ReadDir(root)
	if len(left) != 40-len(res.Removed) {
		t.Fatalf("%d keys left, %d reported removed", len(left), len(res.Removed))
	}
}
