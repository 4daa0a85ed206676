package store

import (
	"errors"
	"os"
	"path/filepath"
	"sessdb/internal/pientry"
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
	stage(t, dir, pientry.Message(data, "u1", "user", "q", "", 0))
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

// A promotion that opened an empty key dir just before reap removed it
// (reached here at the meta.db open's first fault point, the key dir held
// and meta.db not yet looked at) makes nothing in the removed dir: it is
// promote-failed, its staged transcript kept, and its retry promotes into
// a key dir made again.
func TestPromotionBesideAnEmptyKeyDirsReapRetries(t *testing.T) {
	ttl := 14 * 24 * time.Hour
	s, root, clock := newTestStore(t, gates.Bounds{TTL: ttl})
	key := Key("github", "a/b", "raced")
	refusedFirstPromotion(t, s, root, key)
	sess, dir, data := contractJob(t, s, key, "after")
	run := answeredTurn(data, "a", 100)
	stage(t, dir, run)
	past := time.Now().Add(-ttl - time.Hour)
	if err := os.Chtimes(filepath.Join(root, key), past, past); err != nil {
		t.Fatal(err)
	}
	clock.now = time.Now()
	var reaped ReapResult
	var reapErr error
	calls := 0
	faults.Set(func(p faults.Point) error {
		if p == faults.DBOpenBeforeMeta && calls == 0 {
			calls++
			reaped, reapErr = s.Reap(false)
		}
		return nil
	})
	t.Cleanup(func() { faults.Set(nil) })
	res, err := s.Promote(sess, PromoteRequest{PiVersion: testPi})
	faults.Set(nil)
	if reapErr != nil || !slices.Equal(reaped.Removed, []string{key}) {
		t.Fatalf("the reap beside the promotion = %+v, %v; want %s removed", reaped, reapErr, key)
	}
	if err == nil || res.Reason != gates.PromoteFailed {
		t.Fatalf("promote = %+v, %v; want promote-failed", res, err)
	}
	if got := staged(t, dir); string(got) != string(run) {
		t.Fatal("the staged transcript was not kept")
	}
	if _, err := os.Lstat(filepath.Join(root, key)); !os.IsNotExist(err) {
		t.Fatalf("the key dir is back after the failed promotion: %v", err)
	}
	if res := mustPromote(t, s, sess, PromoteRequest{PiVersion: testPi}); !res.Promoted || res.Gen != 1 {
		t.Fatalf("the retry = %+v; want promoted, gen 1", res)
	}
}

// Another dir put at the key's name after reap judged the first one empty
// and idle is not the one judged: it stays.
func TestReapKeepsAnotherDirAtAnEmptyKeysName(t *testing.T) {
	ttl := 14 * 24 * time.Hour
	s, root, clock := newTestStore(t, gates.Bounds{TTL: ttl})
	key := Key("github", "a/b", "swapped")
	refusedFirstPromotion(t, s, root, key)
	past := time.Now().Add(-ttl - time.Hour)
	if err := os.Chtimes(filepath.Join(root, key), past, past); err != nil {
		t.Fatal(err)
	}
	clock.now = time.Now()
	faults.Set(func(p faults.Point) error {
		if p != faults.ReapEmptyBeforeRmdir {
			return nil
		}
		if err := os.Rename(filepath.Join(root, key), filepath.Join(t.TempDir(), "away")); err != nil {
			return err
		}
		return os.Mkdir(filepath.Join(root, key), 0o700)
	})
	t.Cleanup(func() { faults.Set(nil) })
	res, err := s.Reap(false)
	faults.Set(nil)
	if err != nil || len(res.Removed) != 0 || res.Kept != 1 {
		t.Fatalf("reap = %+v, %v; want the key kept", res, err)
	}
	if _, err := os.Lstat(filepath.Join(root, key)); err != nil {
		t.Fatalf("the dir put at the key's name went: %v", err)
	}
}
