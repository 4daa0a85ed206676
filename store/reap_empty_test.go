package store

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"sessdb/gates"
	"sessdb/internal/faults"
	"sessdb/store/transcript"
)

// refusedFirstPromotion leaves key as a refused first promotion does: its
// key dir, with nothing in it.
func refusedFirstPromotion(t *testing.T, s *Store, root, key string) {
	t.Helper()
	sess, dir, data := contractJob(t, s, key, "incomplete")
	stage(t, dir, piMessage(data, "u1", "user", "q", "", 0))
	if r := mustPromote(t, s, sess, PromoteRequest{PiVersion: testPi, Require: transcript.Answered}); r.Reason != gates.RunIncomplete {
		t.Fatalf("promote = %+v, want run-incomplete", r)
	}
	names, err := os.ReadDir(filepath.Join(root, key))
	if err != nil || len(names) != 0 {
		t.Fatalf("the refused key dir holds %v, %v; want it empty", names, err)
	}
}

// An empty key dir, which a refused first promotion leaves, is removed by
// reap once the dir has been unchanged for the TTL, with one rmdir; one
// younger, or with anything in it, stays. Before, reap kept every one for
// ever ("a key with no transcript is never removed").
func TestReapRemovesAnEmptyKeyDirIdlePastTheTTL(t *testing.T) {
	ttl := 14 * 24 * time.Hour
	s, root, clock := newTestStore(t, gates.Bounds{TTL: ttl})
	idle, young, notEmpty := Key("github", "a/b", "idle"), Key("github", "a/b", "young"), Key("github", "a/b", "not-empty")
	for _, k := range []string{idle, young, notEmpty} {
		refusedFirstPromotion(t, s, root, k)
	}
	past := time.Now().Add(-ttl - time.Hour)
	for _, k := range []string{idle, notEmpty} {
		if err := os.Chtimes(filepath.Join(root, k), past, past); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, notEmpty, "notes.txt"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(filepath.Join(root, notEmpty), past, past); err != nil {
		t.Fatal(err)
	}
	clock.now = time.Now()

	before := treeState(t, root)
	dry, err := s.Reap(true)
	if err != nil || !slices.Equal(dry.Removed, []string{idle}) {
		t.Fatalf("dry run = %+v, %v; want %s would be removed", dry, err, idle)
	}
	if treeState(t, root) != before {
		t.Fatal("a dry run changed the tree")
	}
	res, err := s.Reap(false)
	if err != nil || !slices.Equal(res.Removed, []string{idle}) || res.Kept != 2 {
		t.Fatalf("reap = %+v, %v; want %s removed, 2 kept", res, err, idle)
	}
	if _, err := os.Lstat(filepath.Join(root, idle)); !os.IsNotExist(err) {
		t.Fatalf("%s still there: %v", idle, err)
	}
	for _, k := range []string{young, notEmpty} {
		if _, err := os.Lstat(filepath.Join(root, k)); err != nil {
			t.Fatalf("reap removed %s: %v", k, err)
		}
	}
	// The key starts again as a new conversation.
	runJob(t, s, idle, localJob(), PromoteRequest{}, "again")
	sess, _ := mustResolve(t, s, idle, localJob())
	want(t, sess, true, gates.Resumed)
}

// Something made in an empty key dir after reap judged it empty and idle
// (a promotion's meta.db) keeps the key: the rmdir refuses a dir that is
// not empty, and nothing in it is touched.
func TestReapKeepsAnEmptyKeyDirFilledMeanwhile(t *testing.T) {
	ttl := 14 * 24 * time.Hour
	s, root, clock := newTestStore(t, gates.Bounds{TTL: ttl})
	key := Key("github", "a/b", "filled")
	refusedFirstPromotion(t, s, root, key)
	past := time.Now().Add(-ttl - time.Hour)
	if err := os.Chtimes(filepath.Join(root, key), past, past); err != nil {
		t.Fatal(err)
	}
	clock.now = time.Now()
	reached := false
	faults.Set(func(p faults.Point) error {
		if p != faults.ReapEmptyBeforeRmdir {
			return nil
		}
		reached = true
		return os.WriteFile(filepath.Join(root, key, "meta.db"), []byte("a rival's"), 0o600)
	})
	t.Cleanup(func() { faults.Set(nil) })
	res, err := s.Reap(false)
	faults.Set(nil)
	if !reached {
		t.Fatal("reap never came to the rmdir of the empty key dir")
	}
	if err != nil || len(res.Removed) != 0 || res.Kept != 1 {
		t.Fatalf("reap = %+v, %v; want the key kept", res, err)
	}
	if b, err := os.ReadFile(filepath.Join(root, key, "meta.db")); err != nil || string(b) != "a rival's" {
		t.Fatalf("the rival's file: %q, %v", b, err)
	}
	// An error at the step is the key's failure, nothing removed.
	faults.Set(func(p faults.Point) error {
		if p == faults.ReapEmptyBeforeRmdir {
			return errors.New("injected")
		}
		return nil
	})
	os.Remove(filepath.Join(root, key, "meta.db"))
	os.Chtimes(filepath.Join(root, key), past, past)
	res, err = s.Reap(false)
	if err != nil || !slices.Equal(res.Failed, []string{key}) {
		t.Fatalf("reap with the step failing = %+v, %v; want %s failed", res, err, key)
	}
	if _, err := os.Lstat(filepath.Join(root, key)); err != nil {
		t.Fatalf("the key dir went: %v", err)
	}
}
