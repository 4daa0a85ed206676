package main

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"sessdb/internal/faults"
	"sessdb/store"
)

// --to-legacy of a key dir holding a promotion in flight (committed, not
// renamed: a worker killed between the two) rolls it forward before it
// judges the key: a rename of the temp over current.jsonl, or, of a
// damaged temp, its removal, in the key dir. Run as nobody in a key dir
// of mode 0500, that write is refused and the run fails the key, exit 1
// (a damaged temp's removal unreported, as "a pending promotion was not
// settled"), whatever it would have judged after; its dry run fails it
// alike, in the run's words. Before, the dry run said what it judged
// after the roll-forward it only read: a key it planned as a conflict (a
// directory with entries at a legacy file's name) failed on that, and
// one it planned to roll back on its first legacy temp's open, as the
// fleet's dry runs did before 04ad8d0 (rollForwardRefused).
func TestALegacyRollbacksDryRunOverAPromotionInFlightAsksTheRollForwardsWrite(t *testing.T) {
	for _, c := range []struct {
		name              string
		damaged, conflict bool
	}{
		{"a whole temp", false, false},
		{"a damaged temp", true, false},
		{"a whole temp, a conflict", false, true},
		{"a damaged temp, a conflict", true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := newNobodysWorker(t)
			s, err := store.New(w.root, store.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if res, err := promoteMarker(s, workerKey, "1"); err != nil || !res.Promoted {
				t.Fatalf("promote: %+v, %v", res, err)
			}
			faults.Set(func(p faults.Point) error {
				if p == faults.PromoteAfterCommit {
					return errors.New("killed after the commit")
				}
				return nil
			})
			_, err = promoteMarker(s, workerKey, "2")
			faults.Set(nil)
			if err == nil {
				t.Fatal("the promotion did not stop after its commit")
			}
			kd := filepath.Join(w.root, workerKey)
			if c.damaged {
				names, _ := filepath.Glob(filepath.Join(kd, "."+store.TranscriptName+".tmp-*"))
				if len(names) != 1 {
					t.Fatalf("the promotion's temps: %v; want one", names)
				}
				if err := os.Truncate(names[0], 10); err != nil {
					t.Fatal(err)
				}
			}
			if c.conflict {
				// A directory with entries where the rollback puts venue.
				if err := os.MkdirAll(filepath.Join(kd, "venue", "x"), 0o700); err != nil {
					t.Fatal(err)
				}
			}
			giveToNobody(w.root)
			if err := os.Chmod(kd, 0o500); err != nil {
				t.Fatal(err)
			}
			defer os.Chmod(kd, 0o700) // for the cleanup
			before := tree(t, w.root)
			dcode, dout, derrs := w.runAs("migrate", "--to-legacy", "--dry-run", w.root)
			if tree(t, w.root) != before {
				t.Error("the dry run changed the root")
			}
			code, out, errs := w.runAs("migrate", "--to-legacy", w.root)
			cause := runsCause(failedKeyLine(out, workerKey))
			if code != exitFault || cause == "" {
				t.Fatalf("the run: exit %d\n%s\n%s; want the key failed", code, out, errs)
			}
			if dcause := runsCause(failedKeyLine(dout, workerKey)); dcode != code || dcause != cause {
				t.Errorf("the dry run: exit %d, %q\n%s\n%s\nwant exit %d and the run's words, %q", dcode, dcause, dout, derrs, code, cause)
			}
		})
	}
}
