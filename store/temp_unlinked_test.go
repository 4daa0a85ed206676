package store

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"sessdb/db"
	"sessdb/gates"
	"sessdb/internal/fsat"
)

// A meta.db temp's creator lets go of its flock only once the temp's name
// is gone (linked into place and unlinked, or removed when the creation
// failed). A removal that opened the temp just before that and had the
// flock just after, on a file no name leads to, took it for debris and
// "removed" it: the unlink found nothing, which fsat.Remove takes for
// done. check --repair said "removed" of a temp its creator had removed,
// and reap listed it as swept. As check's look does since 1ca2522
// (TestCheckOfAMetaDBTempLinkedUnderTheLook), the removal looks at the
// name again once it has the flock: a temp gone by then is gone since it
// was found, not removed by the repair or the sweep.

// check --repair's removal (removeTemps), under the key's lock: a temp
// the look found stray, whose creator removes it under the removal's look
// (a creation that failed once the repair's meta.db was there).
func TestCheckRepairOfAMetaDBTempItsCreatorRemovedSaysSo(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	key := chkKey(t, s, "meta temp removed under the repair")
	name := db.TempPrefix + "00000000000000c0"
	tmp := filepath.Join(root, key, name)
	if err := os.WriteFile(tmp, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	// Older than a creator waits for its temp's flock (db.TempInFlight):
	// the first open is the look's, which finds the temp stray at once;
	// the second the repair's removal's.
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(tmp, old, old); err != nil {
		t.Fatal(err)
	}
	opens := removedAtOpen(t, tmp, 2)
	var repair []string
	for _, f := range checkFindings(t, s, CheckOptions{Repair: true}) {
		if f.Path == key+"/"+name {
			repair = append(repair, string(f.Kind)+": "+f.Repair)
		}
	}
	want := []string{string(KindStrayTemp) + ": removed by the roll-forward, or gone since it was found"}
	if !slices.Equal(repair, want) {
		t.Errorf("check --repair of the temp its creator removed under the repair's look: %q; want %q", repair, want)
	}
	if *opens < 2 {
		t.Fatalf("the temp was opened %d times; want the look's and the repair's", *opens)
	}
}

// reap's sweep of stale temps (sweepStaleTemps), in a key with no meta.db
// (no lock to take: the temps' age is the guard, and a clock that jumped
// ahead makes a live one old) and in one with a meta.db (under its lock):
// the temp its creator removes under the sweep's look is not swept.
func TestReapOfAMetaDBTempItsCreatorRemovedSweepsNothing(t *testing.T) {
	for _, withDB := range []bool{false, true} {
		t.Run(fmt.Sprintf("meta.db %v", withDB), func(t *testing.T) {
			s, root, clock := newTestStore(t, gates.Bounds{})
			key := testKey
			if withDB {
				key = chkKey(t, s, "meta temp removed under the sweep")
			} else {
				writeLegacy(t, root, key, map[string]string{TranscriptName: string(transcriptBytes(clock.now, "legacy turn")), "pi-version": testPi})
			}
			name := db.TempPrefix + "00000000000000d0"
			tmp := filepath.Join(root, key, name)
			if err := os.WriteFile(tmp, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			old := clock.now.Add(-2 * StaleTempAge)
			if err := os.Chtimes(tmp, old, old); err != nil {
				t.Fatal(err)
			}
			opens := removedAtOpen(t, tmp, 1)
			res, err := s.Reap(false)
			if err != nil || len(res.Swept) != 0 || len(res.Failed) != 0 {
				t.Errorf("reap = %+v, %v; want nothing swept, nothing failed", res, err)
			}
			if *opens != 1 {
				t.Fatalf("the temp was opened %d times; want the sweep's once", *opens)
			}
		})
	}
}

// removedAtOpen has fsat.FlockedNow remove tmp at its nth open of it,
// between the open and the flock (the creator's unlink, and its flock let
// go), and counts those opens.
func removedAtOpen(t *testing.T, tmp string, nth int) *int {
	opens := 0
	fsat.TestHookFlockedNowOpened = func(n string) {
		if n != filepath.Base(tmp) {
			return
		}
		if opens++; opens == nth {
			if err := os.Remove(tmp); err != nil {
				t.Error(err)
			}
		}
	}
	t.Cleanup(func() { fsat.TestHookFlockedNowOpened = nil })
	return &opens
}
