package store

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sessdb/gates"
)

// A key dir anyone may write in that is not the sessions root's owner's
// (root's, in a worker's root: a job run as root once under umask 0) is
// named, and --repair, which changes only the root's owner's modes,
// leaves it and says why. Before, its repair said 'gone since it was
// found: what is at its name now is not the owner's directory', while
// the dir was there all along, as it was found.
func TestCheckSaysWhyItLeavesAnotherUsersOpenKeyDir(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: a key dir of another owner than the root's")
	}
	s, root, _ := newTestStore(t, gates.Bounds{})
	key := runJobKey(t, s, "open other")
	givenToAWorker(t, root)
	kd := filepath.Join(root, key)
	must(t, os.Lchown(kd, 0, 0))
	must(t, os.Chmod(kd, 0o777))
	found := checkFindings(t, s, CheckOptions{Repair: true})
	var f *Finding
	for i := range found {
		if found[i].Kind == KindMode && found[i].Path == key {
			f = &found[i]
		}
	}
	if f == nil {
		t.Fatalf("no mode finding for %s in %+v", key, found)
	}
	if f.Repaired || !f.Remains || strings.Contains(f.Repair, "gone since it was found") || !strings.Contains(f.Repair, "uid 0's") {
		t.Errorf("--repair of root's key dir of mode 0777 in a worker's root: %+v", *f)
	}
	if fi, err := os.Lstat(kd); err != nil || fi.Mode().Perm() != 0o777 {
		t.Errorf("key dir after --repair: %v, %v; want it left 0777", fi.Mode().Perm(), err)
	}
}
