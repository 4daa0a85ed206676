package db

import (
	"path/filepath"
	"testing"

	"sessdb/internal/durable/dbseam"
	"sessdb/internal/durable/powercut"
	"sessdb/internal/faults"
)

// armJournal makes this test's creations and copies of meta.db through a
// power-cut journal, which can take back what a power cut would.
func armJournal(t *testing.T) *powercut.Journal {
	t.Helper()
	j := powercut.New()
	dbseam.Set(j)
	t.Cleanup(func() { dbseam.Set(nil) })
	return j
}

// venueAfter opens, read-only, meta.db of kd's copy in the image img, and
// returns the venue committed there.
func venueAfter(t *testing.T, kd keyDir, img powercut.Image) (string, error) {
	t.Helper()
	ik := openKeyDir(t, filepath.Join(img.Dir, filepath.Base(kd.path)))
	d, err := OpenReader(ik.dir, ik.db, testOpts)
	if err != nil {
		return "", err
	}
	defer d.Close()
	return venueOf(t, d), nil
}

// holdsVenue fails t unless every power cut the journal can image at this
// instant leaves kd's meta.db whole, with want committed.
func holdsVenue(t *testing.T, j *powercut.Journal, kd keyDir, when, want string) {
	t.Helper()
	for _, img := range j.Images(t, filepath.Dir(kd.path)) {
		got, err := venueAfter(t, kd, img)
		if err != nil || got != want {
			t.Errorf("%s, %s: meta.db holds venue %q (open: %v), want %q (the cut took back %v)", when, img.Mode, got, err, want, img.Lost)
		}
	}
}

// An Update that returned on a meta.db its own open created is durable:
// the new file's name is, before the open returns (create's directory
// fsync), not only its pages (bbolt's).
func TestACommitOnANewMetaDBSurvivesAPowerCut(t *testing.T) {
	kd := newKeyDir(t)
	j := armJournal(t)
	putVenue(t, kd, "first")
	holdsVenue(t, j, kd, "after the first commit on a meta.db just created", "first")
}

// A writer gives a hard-linked meta.db a file of its own (ownFile): its
// copy is whole before its name is meta.db, so that a power cut at any
// step leaves the old file or the whole copy; and the copy's name is
// durable before the open returns, so that a commit into it is not lost
// with the old file coming back.
func TestAHardLinkedMetaDBsCopySurvivesAPowerCut(t *testing.T) {
	kd := newKeyDir(t)
	putVenue(t, kd, "before")
	hardLink(t, kd)
	j := armJournal(t)
	cuts := 0
	faults.Set(func(p faults.Point) error {
		if p == faults.DBOwnFileAfterRename {
			cuts++
			holdsVenue(t, j, kd, "the copy renamed over meta.db", "before")
		}
		return nil
	})
	t.Cleanup(func() { faults.Set(nil) })
	putVenue(t, kd, "after")
	if cuts != 1 {
		t.Fatalf("the writer's open passed %s %d times, want 1 (no copy made?)", faults.DBOwnFileAfterRename, cuts)
	}
	holdsVenue(t, j, kd, "after a commit into the copy", "after")
}
