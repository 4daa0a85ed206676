package store

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"sessdb/db"
	"sessdb/gates"
	"sessdb/internal/faults"
)

// The deep check opens meta.db by its name in the key dir, while check
// holds the file it opened first under its shared lock: with another file
// (a damaged one) renamed over meta.db while the deep check runs and A's
// own back before the repair, that file's damage is no proof about A's
// meta.db, which must not be reported as failing bbolt's check, nor moved
// aside. The same A,B,A as a swapped key dir's, one level down.
func TestDeepCheckOfASwappedMetaDBProvesNothing(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "A")
	a := filepath.Join(root, testKey)
	meta := filepath.Join(a, db.FileName)
	aside := filepath.Join(t.TempDir(), "a")
	b := filepath.Join(t.TempDir(), "b")
	must(t, os.WriteFile(b, bytes.Repeat([]byte("not a bbolt file "), 2048), 0o600))
	before, err := os.ReadFile(meta)
	must(t, err)
	deep := func(_ context.Context, key string) (DeepResult, error) {
		must(t, os.Rename(meta, aside))
		must(t, os.Rename(b, meta))
		defer func() {
			must(t, os.Rename(meta, b))
			must(t, os.Rename(aside, meta))
		}()
		return s.DeepCheckDB(key), nil
	}
	var found []Finding
	if _, err := s.Check(context.Background(), CheckOptions{Repair: true, DeepCheck: deep}, func(f Finding) error {
		found = append(found, f)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for _, f := range found {
		if f.Kind == KindMetaCheckFailed && !strings.Contains(f.Detail, "proves nothing") || f.Kind == KindMovedAside {
			t.Errorf("check --repair: %s %s: %s; %s", f.Kind, f.Path, f.Detail, f.Repair)
		}
	}
	// The swap itself renamed A's meta.db away and back: its bytes are
	// what must be as they were, at its name.
	if after, err := os.ReadFile(meta); err != nil || !bytes.Equal(after, before) {
		t.Fatalf("A's meta.db: %d bytes, %v; want its %d bytes as they were", len(after), err, len(before))
	}
	sess, _ := checkDescribed(t, s, root, testKey)
	want(t, sess, true, gates.Resumed)
}

// The same swap inside the deep check itself (B renamed over meta.db once
// the open has the key dir): its result is about no file the name led to
// throughout, and says it did not complete, with no problem of B's.
func TestDeepCheckOfAMetaDBSwappedWhileItRuns(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "A")
	meta := filepath.Join(root, testKey, db.FileName)
	aside := filepath.Join(t.TempDir(), "a")
	b := filepath.Join(t.TempDir(), "b")
	must(t, os.WriteFile(b, bytes.Repeat([]byte("not a bbolt file "), 2048), 0o600))
	var once atomic.Bool
	faults.Set(func(p faults.Point) error {
		if p == faults.DBOpenBeforeMeta && once.CompareAndSwap(false, true) {
			must(t, os.Rename(meta, aside))
			must(t, os.Rename(b, meta))
		}
		return nil
	})
	defer faults.Set(nil)
	res := s.DeepCheckDB(testKey)
	faults.Set(nil)
	if !once.Load() {
		t.Fatal("the deep check's open never reached db-open/before-meta")
	}
	if len(res.Problems) != 0 || !strings.Contains(res.Incomplete, "replaced while it was checked") {
		t.Fatalf("deep check = %+v; want it incomplete, meta.db replaced, no problem of B's", res)
	}
}

// With no file at meta.db's name before the deep check's open and none
// after its check (A renamed away and back around it), a file B that was
// at the name only for the open is no more A's than one that stays: its
// damage is no proof about A, which check holds, and the deep check says
// it did not complete. The look before and the look after both finding
// no file said only that the open found none, not which file it checked.
func TestDeepCheckOfAFileAtMetaDBsNameOnlyWhileItRuns(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "A")
	meta := filepath.Join(root, testKey, db.FileName)
	aside := filepath.Join(t.TempDir(), "a")
	b := filepath.Join(t.TempDir(), "b")
	must(t, os.WriteFile(b, bytes.Repeat([]byte("not a bbolt file "), 2048), 0o600))
	before, err := os.ReadFile(meta)
	must(t, err)
	var in, out atomic.Bool
	deep := func(_ context.Context, key string) (DeepResult, error) {
		must(t, os.Rename(meta, aside))
		defer func() { must(t, os.Rename(aside, meta)) }()
		faults.Set(func(p faults.Point) error {
			switch {
			case p == faults.DBOpenBeforeMeta && in.CompareAndSwap(false, true):
				must(t, os.Rename(b, meta))
			case p == faults.DeepCheckAfterCheck && in.Load() && out.CompareAndSwap(false, true):
				must(t, os.Rename(meta, b))
			}
			return nil
		})
		defer faults.Set(nil)
		return s.DeepCheckDB(key), nil
	}
	var found []Finding
	if _, err := s.Check(context.Background(), CheckOptions{Repair: true, DeepCheck: deep}, func(f Finding) error {
		found = append(found, f)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if !out.Load() {
		t.Fatal("B was never at meta.db's name for the deep check's open")
	}
	for _, f := range found {
		if f.Kind == KindMetaCheckFailed && !strings.Contains(f.Detail, "replaced while it was checked") || f.Kind == KindMovedAside {
			t.Errorf("check --repair: %s %s: %s; %s", f.Kind, f.Path, f.Detail, f.Repair)
		}
	}
	if after, err := os.ReadFile(meta); err != nil || !bytes.Equal(after, before) {
		t.Fatalf("A's meta.db: %d bytes, %v; want its %d bytes as they were", len(after), err, len(before))
	}
}
