package fleet

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"sessdb/fleet/shared"
	"sessdb/store"
)

// TestPowerCutDuringAReapThatMarksTheDir cuts the power at every write
// boundary of a reap on a transcripts dir from before marks (or whose mark
// an operator removed, as docs/fleet.md advises), which holds a temp of a
// marking that died: the reap marks the dir (the mark's temp made, fsynced
// and renamed into place, the dir fsynced), removes an expired key (its
// record, then its file), and sweeps the orphans (a superseded generation,
// a stray one, a temp, the dead marking's temp, an empty key dir and the
// dir the removed key emptied). At each cut, and after the run returned,
// the reboot finds every acknowledged generation whole, check names each
// file left and nothing else, and a later reap (run twice, as
// reapAgain's doc says) finishes the job: nothing left that no record
// needs, and the dir marked for this fleet. So too where the file system
// has no atomic no-replace rename (the mark linked into place, its temp
// unlinked).
func TestPowerCutDuringAReapThatMarksTheDir(t *testing.T) {
	for _, link := range []bool{false, true} {
		t.Run(map[bool]string{false: "rename", true: "link and unlink"}[link], func(t *testing.T) {
			cutAReapThatMarksTheDir(t, link)
		})
	}
}

func cutAReapThatMarksTheDir(t *testing.T, link bool) {
	f, parent := powerFixture(t)
	old, fresh := store.Key("github", "powercut", "old"), store.Key("github", "powercut", "fresh")
	f.now = time.Now().Add(-30 * 24 * time.Hour)
	f.run(old, "old")
	f.now = time.Time{}
	f.run(fresh, "a")
	f.run(fresh, "b")
	plantOrphans(t, f, fresh)
	dead := shared.MarkName + ".tmp-00000000000000aa"
	if err := os.WriteFile(filepath.Join(f.dir, dead), []byte("a marking that died"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(f.dir, shared.MarkName)); err != nil {
		t.Fatal(err)
	}
	f.b = f.open() // a reaper that has not claimed the dir
	c := armCutter(t, f, parent)
	c.noAtomic = link
	res, err := f.b.Reap(t.Context(), ReapOptions{TTL: 14 * 24 * time.Hour, Now: later})
	c.disarm(f)
	if err != nil || !slices.Equal(res.Removed, []string{old}) || len(res.Swept) != 6 || !slices.Contains(res.Swept, dead) || !slices.Contains(res.Swept, old+"/") {
		t.Fatalf("reap = %+v, %v; want %s removed, five orphans (%s among them) and its emptied dir swept", res, err, old, dead)
	}
	if m, found, err := shared.ReadMark(f.dir); err != nil || !found || m.Prefix != f.prefix {
		t.Fatalf("the reap left the mark %+v (found %v, %v); want its fleet's", m, found, err)
	}
	through := []string{"before create " + shared.MarkName + ".tmp-", "before rename " + shared.MarkName + ".tmp-", "before fsync t",
		"at " + hookReapDelete, "at " + hookSweep, "before unlink " + old, "before unlink " + fresh, "before unlink t/" + dead, "before rmdir"}
	if link {
		through[1] = "before link " + shared.MarkName + ".tmp-"
		through = append(through, "before unlink t/"+shared.MarkName+".tmp-")
	}
	c.through(through...)
	id, err := f.b.meta.FleetID(t.Context(), false)
	if err != nil || id == "" {
		t.Fatalf("the fleet's ID: %q, %v", id, err)
	}
	c.verify(t, f, judge{
		markers: map[string]map[uint64]string{old: {1: "old"}, fresh: {1: "a", 2: "b"}},
		expired: []string{old},
		least:   func(string) map[string]uint64 { return map[string]uint64{fresh: 2} },
		gone: func(where string) []string {
			if strings.HasPrefix(where, "cut "+returned) {
				return []string{old}
			}
			return nil
		},
		clean: func(t *testing.T, cut fleetCut, b *Backend) {
			reapAgain(t, cut, b)
			if m, found, err := shared.ReadMark(b.dir); err != nil || !found || m.ID != id {
				t.Errorf("cut %s, %s: after the reaps the dir's mark is %+v (found %v, %v); want the fleet's, %s", cut.at, cut.Mode, m, found, err, id)
			}
		},
	})
}
