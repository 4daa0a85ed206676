package fleet

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sessdb/fleet/internal/sharedfs"
	"sessdb/fleet/shared"
	"sessdb/internal/durable/powercut"
	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// check --repair's mode repairs in a transcripts dir (the dir itself, its
// mark, a key dir, a generation, each lacking owner's bits the fleet
// needs) go through the fleet's durability seam and are fsynced before
// check says them repaired: a power cut right after the run takes none
// of them back. Before, the chmod passed by the seam and no inode was
// fsynced: the repair was reported done while a cut could give every
// mode back.
func TestAModeRepairInATranscriptsDirSurvivesAPowerCut(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("gives the transcripts dir to another user: run as root to test it")
	}
	// Not workersFleet: that runs beside other tests, where the seam is
	// not this test's to set.
	f := newFixture(t, etcdtest.Start1(t))
	key := store.Key("github", "powercut-mode", "key")
	f.run(key, "a")
	if err := filepath.Walk(f.dir, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, worker, worker)
	}); err != nil {
		t.Fatal(err)
	}
	modes := []struct {
		path      string
		bad, want os.FileMode
	}{
		{f.genOf(key), 0o200, 0o600},
		{shared.MarkName, 0o200, 0o600},
		{key, 0o500, 0o700},
		{".", 0o500, 0o700},
	}
	for _, m := range modes {
		if err := os.Chmod(filepath.Join(f.dir, m.path), m.bad); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { os.Chmod(f.dir, 0o700); os.Chmod(filepath.Join(f.dir, key), 0o700) })
	j := powercut.New()
	restore := sharedfs.Use(j)
	repaired := map[string]bool{}
	_, err := f.b.Check(t.Context(), CheckOptions{Repair: true}, func(fd store.Finding) error {
		if fd.Kind == store.KindMode && fd.Repaired && !fd.Remains && strings.Contains(fd.Repair, "gave its owner the bits it lacked") {
			repaired[fd.Path] = true
		}
		return nil
	})
	restore()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range modes {
		if !repaired[m.path] {
			t.Fatalf("%s: not said repaired by check --repair (%v)", m.path, repaired)
		}
	}

	j.Cut(t)
	for _, m := range modes {
		if fi, err := os.Lstat(filepath.Join(f.dir, m.path)); err != nil || fi.Mode().Perm() != m.want {
			t.Errorf("%s after a power cut: %v, %v; want the mode repaired, %v", m.path, fi.Mode().Perm(), err, m.want)
		}
	}
}
