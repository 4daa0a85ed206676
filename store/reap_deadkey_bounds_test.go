package store

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"sessdb/db"
	"sessdb/gates"
	"sessdb/internal/faults"
)

// deadKeyDir makes testKey's dir with a meta.db that fill writes in (nil:
// nothing), no transcript, and sets the dir's and meta.db's mtimes.
func deadKeyDir(t *testing.T, root string, fill func(*db.Tx) error, dirAt, metaAt time.Time) string {
	t.Helper()
	kd := filepath.Join(root, testKey)
	if err := os.MkdirAll(kd, 0o700); err != nil {
		t.Fatal(err)
	}
	dir, err := os.Open(kd)
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	d, _, err := db.OpenSidecars(dir, db.Options{}, true)
	if err != nil {
		t.Fatal(err)
	}
	if fill != nil {
		err = d.Update(fill)
	}
	d.Close()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(filepath.Join(kd, db.FileName), metaAt, metaAt); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(kd, dirAt, dirAt); err != nil {
		t.Fatal(err)
	}
	return kd
}

// A key dir with no transcript is removed as holding nothing only when
// its meta.db holds nothing: a stamp alone (a venue another binary or a
// hand wrote), or a history whose newest entry is a reaping one but which
// holds a refusal before it, keeps it however long idle; and its clock is
// the later of the dir's and meta.db's mtimes, so either one young keeps
// it, but for meta.db's once it holds a reaping entry, which a reap wrote
// on judging the key idle past the TTL (and set that mtime). Each case is
// judged by the dry run and the run alike.
func TestReapJudgesAKeyWithNoTranscriptByAllItsMetaDBAndBothClocks(t *testing.T) {
	old := time.Date(2026, 10, 1, 12, 0, 0, 0, time.UTC) // 31 days before the test clock
	young := time.Date(2026, 11, 1, 11, 0, 0, 0, time.UTC)
	venue := func(tx *db.Tx) error { return tx.PutVenue("local") }
	refusedThenReaping := func(tx *db.Tx) error {
		if _, err := tx.AppendHistory(db.HistoryEntry{Gen: 0, Outcome: string(gates.Superseded)}); err != nil {
			return err
		}
		_, err := tx.AppendHistory(db.HistoryEntry{Gen: 0, Outcome: reapingOutcome, Reason: string(gates.Expired)})
		return err
	}
	reapingOnly := func(tx *db.Tx) error {
		_, err := tx.AppendHistory(db.HistoryEntry{Gen: 0, Outcome: reapingOutcome, Reason: string(gates.Expired)})
		return err
	}
	for _, c := range []struct {
		name          string
		fill          func(*db.Tx) error
		dirAt, metaAt time.Time
		removed       bool
	}{
		{"a venue alone", venue, old, old, false},
		{"a refusal before a reaping entry", refusedThenReaping, old, old, false},
		{"a reaping entry alone", reapingOnly, old, old, true},
		// The entry's reap judged the key idle past the TTL; its write
		// set meta.db's mtime (a reap cut or killed after it). Before,
		// kept for a whole TTL more.
		{"a reaping entry, meta.db young", reapingOnly, old, young, true},
		{"a reaping entry, the dir young", reapingOnly, young, old, false},
		{"the dir young", nil, young, old, false},
		{"meta.db young", nil, old, young, false},
		{"both old", nil, old, old, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, root, _ := newTestStore(t, gates.Bounds{TTL: 24 * time.Hour})
			kd := deadKeyDir(t, root, c.fill, c.dirAt, c.metaAt)
			for _, dry := range []bool{true, false} {
				r, err := s.ReapWith(context.Background(), ReapOptions{DryRun: dry})
				if err != nil || len(r.Skipped) != 0 || slices.Equal(r.Removed, []string{testKey}) != c.removed || (r.Kept == 1) == c.removed {
					t.Fatalf("reap (dry run %v) = %+v, %v; want removed %v", dry, r, err, c.removed)
				}
			}
			_, err := os.Lstat(kd)
			if gone := os.IsNotExist(err); gone != c.removed {
				t.Fatalf("after the reap the key dir is gone: %v (%v); want %v", gone, err, c.removed)
			}
		})
	}
}

// A key that holds nothing, judged dead and idle by reap's first look,
// that changes before reap has its lock (a refused promotion writes its
// history entry; a promotion makes its temp in the dir, and dies): judged
// again under the lock, by all its meta.db and its clocks, it is kept.
func TestReapKeepsADeadKeyThatChangesAfterItsLook(t *testing.T) {
	refusal := func(kd string) error {
		dir, err := os.Open(kd)
		if err != nil {
			return err
		}
		defer dir.Close()
		d, _, err := db.OpenSidecars(dir, db.Options{}, true)
		if err != nil {
			return err
		}
		defer d.Close()
		return d.Update(func(tx *db.Tx) error {
			_, err := tx.AppendHistory(db.HistoryEntry{Gen: 0, Outcome: string(gates.Superseded)})
			return err
		})
	}
	temp := func(kd string) error {
		return os.WriteFile(filepath.Join(kd, tmpPrefix+"0123456789abcdef"), []byte("{}\n"), 0o600)
	}
	for name, change := range map[string]func(string) error{"a refusal": refusal, "a temp": temp} {
		t.Run(name, func(t *testing.T) {
			s, root, _ := newTestStore(t, gates.Bounds{TTL: 24 * time.Hour})
			old := time.Date(2026, 10, 1, 12, 0, 0, 0, time.UTC)
			kd := deadKeyDir(t, root, nil, old, old)
			landed := false
			faults.Set(func(p faults.Point) error {
				if p != faults.ReapBeforeLock || landed {
					return nil
				}
				landed = true
				return change(kd)
			})
			defer faults.Set(nil)
			r, err := s.Reap(false)
			if !landed {
				t.Fatal("reap never went for the lock: it did not judge the key dead")
			}
			if err != nil || r.Kept != 1 || len(r.Removed) != 0 || len(r.Skipped) != 0 {
				t.Fatalf("reap = %+v, %v; want the key kept", r, err)
			}
			if _, err := os.Lstat(kd); err != nil {
				t.Fatalf("the key dir: %v", err)
			}
		})
	}
}
