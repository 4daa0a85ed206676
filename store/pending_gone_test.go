package store

import (
	"os"
	"path/filepath"
	"testing"

	"sessdb/gates"
	"sessdb/internal/faults"
)

// A committed promotion's temp that a resolve found at its name and that
// is gone when it opens it (removed by hand in between; an lstat failing
// for want of kernel memory looks the same) is settled, as it would be had
// it been gone at the look: the resolve serves what is in place. It
// served nothing: the ladder judged current.jsonl's observation, and the
// copy read the temp it never opened, a nil file (the process died of a
// nil pointer dereference); dump and check (which serve the temp too)
// likewise.
func TestPendingTempGoneAfterItsLookIsSettled(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "before")
	sess, jobDir := mustResolve(t, s, testKey, localJob())
	stage(t, jobDir, append(staged(t, jobDir), entryLine("lost")...))
	tmp := crashAfterCommit(t, s, root, sess)
	removed := 0
	faults.Set(func(p faults.Point) error {
		if p == faults.PendingAfterLook && removed == 0 {
			removed++
			return os.Remove(tmp)
		}
		return nil
	})
	t.Cleanup(func() { faults.Set(nil) })
	got, dir := mustResolve(t, s, testKey, localJob())
	if removed != 1 {
		t.Fatal("the resolve never looked at the pending promotion's temp")
	}
	// The generation before the lost promotion is in place: the key holds it.
	want(t, got, true, gates.Resumed)
	if data := staged(t, dir); got.Gen() != 1 || markerOf(data, 1) != "before" {
		t.Fatalf("resumed gen %d holding %q; want gen 1, the generation in place", got.Gen(), markerOf(data, 1))
	}
}

// A temp gone between the look and the open is settled as one gone
// before the look, whatever is in place: the resolve's verdict is the
// same either way. The resolve that found it gone at the open went on to
// read what is in place as if it were the temp, found it not what the
// commit recorded, and took the promotion for lost where the key holds
// something else.
func TestAPendingTempGoneAfterItsLookIsJudgedAsOneGoneBefore(t *testing.T) {
	inPlace := map[string]func(t *testing.T, cur string){
		"the generation before it": func(*testing.T, string) {},
		"another transcript": func(t *testing.T, cur string) {
			if err := os.WriteFile(cur, transcriptBytes(testClockStart, "out of band"), 0o600); err != nil {
				t.Fatal(err)
			}
		},
		"nothing": func(t *testing.T, cur string) {
			if err := os.Remove(cur); err != nil {
				t.Fatal(err)
			}
		},
	}
	for name, put := range inPlace {
		t.Run(name, func(t *testing.T) {
			resolve := func(afterLook bool) Session {
				s, root, _ := newTestStore(t, gates.Bounds{})
				tmp := commitWithoutRename(t, s, root)
				put(t, filepath.Join(root, testKey, TranscriptName))
				removed := false
				if afterLook {
					faults.Set(func(p faults.Point) error {
						if p == faults.PendingAfterLook && !removed {
							removed = true
							return os.Remove(tmp)
						}
						return nil
					})
					defer faults.Set(nil)
				} else if err := os.Remove(tmp); err != nil {
					t.Fatal(err)
				}
				got, err := s.Resolve(testKey, localJob(), t.TempDir())
				if err != nil || afterLook && !removed {
					t.Fatalf("resolve (temp removed after the look: %v): %v (removed: %v)", afterLook, err, removed)
				}
				return got
			}
			before, after := resolve(false), resolve(true)
			if after.Reason != before.Reason || after.Gen() != before.Gen() {
				t.Errorf("the temp gone after the look: %s at gen %d; gone before it: %s at gen %d; want the same", after.Reason, after.Gen(), before.Reason, before.Gen())
			}
		})
	}
}
