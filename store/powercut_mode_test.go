package store

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sessdb/db"
	"sessdb/gates"
	"sessdb/internal/durable/powercut"
)

// check --repair's mode repairs (a sessions root, a key dir, its meta.db
// and transcript, each lacking owner's bits the store needs) go through
// the durability seam and are fsynced before check says them repaired: a
// power cut right after the run takes none of them back, and the look
// after it finds nothing to repair. Before, the chmod passed by the seam
// and no inode was fsynced: the repair was reported done (exit 0) while
// a power cut could give the key back every mode it had.
func TestAModeRepairSurvivesAPowerCut(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	key := runJobKey(t, s, "cut")
	bad := []modeCase{
		{key, TranscriptName, 0o240, 0o640, ""},
		{key, db.FileName, 0o400, 0o600, ""},
		{key, ".", 0o500, 0o700, ""},
	}
	givenToAWorker(t, root)
	for _, b := range bad {
		must(t, os.Chmod(filepath.Join(root, b.key, b.name), b.mode))
	}
	must(t, os.Chmod(root, 0o500))
	t.Cleanup(func() { os.Chmod(root, 0o700); os.Chmod(filepath.Join(root, key), 0o700) })
	journal := powercut.New()
	s.disk = diskWrites{journal}
	repaired := map[string]bool{}
	for _, f := range checkFindings(t, s, CheckOptions{Repair: true}) {
		if f.Kind == KindMode && f.Repaired && !f.Remains && strings.Contains(f.Repair, "gave its owner the bits it lacked") {
			repaired[f.Path] = true
		}
	}
	for _, p := range []string{".", bad[0].path(), bad[1].path(), bad[2].path()} {
		if !repaired[p] {
			t.Fatalf("%s: not said repaired by check --repair (%v)", p, repaired)
		}
	}

	journal.Cut(t)
	if fi, err := os.Lstat(root); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("the sessions root after a power cut: %v, %v; want the mode repaired, 0700", fi.Mode().Perm(), err)
	}
	for _, b := range bad {
		if fi, err := os.Lstat(filepath.Join(root, b.key, b.name)); err != nil || fi.Mode().Perm() != b.want {
			t.Errorf("%s after a power cut: %v, %v; want the mode repaired, %v", b.path(), fi.Mode().Perm(), err, b.want)
		}
	}
	for _, f := range checkFindings(t, s, CheckOptions{}) {
		if f.Severity == SeverityProblem {
			t.Errorf("after --repair and a power cut: %+v", f)
		}
	}
}
