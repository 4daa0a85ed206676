package store

import (
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"sessdb/gates"
	"sessdb/internal/faults"
)

// A reap-owned dir holding an immutable entry is failed whole by every
// reap and check --repair (removable); check says so, naming the
// refusal, rather than that the next reap or check --repair removes it.
// Before, check's finding said "the next reap or check --repair removes
// it", and check --repair's own line then said it could not.
func TestCheckSaysAReapOwnedDirWithAnImmutableEntryIsNotRemoved(t *testing.T) {
	s, root, clock := newTestStore(t, gates.Bounds{TTL: opsTTL})
	expiredKey(t, s, clock, testKey)
	faults.Set(func(p faults.Point) error {
		if p == faults.ReapAfterRename {
			return errors.New("killed")
		}
		return nil
	})
	s.Reap(false)
	faults.Set(nil)
	left, _ := filepath.Glob(filepath.Join(root, ReapedPrefix+"*"))
	if len(left) != 1 {
		t.Fatalf("the killed reap left %v", left)
	}
	chattr(t, "+i", filepath.Join(left[0], TranscriptName))
	t.Cleanup(func() { exec.Command("chattr", "-R", "-i", root).Run() })
	for _, repair := range []bool{false, true} {
		var got []Finding
		if _, err := s.Check(t.Context(), CheckOptions{Repair: repair}, func(f Finding) error { got = append(got, f); return nil }); err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got[0].Kind != KindReapInterrupted || strings.HasSuffix(got[0].Detail, "the next reap or check --repair removes it") ||
			!strings.Contains(got[0].Detail, "immutable") || !strings.Contains(got[0].Detail, "neither the next reap nor check --repair removes it") {
			t.Errorf("check (repair %v): %+v; want one reap-interrupted finding naming the immutable entry, not that a reap removes it", repair, got)
		}
	}
	chattr(t, "-i", filepath.Join(left[0], TranscriptName))
	var got []Finding
	if _, err := s.Check(t.Context(), CheckOptions{}, func(f Finding) error { got = append(got, f); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || !strings.HasSuffix(got[0].Detail, "the next reap or check --repair removes it") {
		t.Errorf("check once the attribute is cleared: %+v; want the next reap to remove it", got)
	}
}
