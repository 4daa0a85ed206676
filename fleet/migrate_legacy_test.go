package fleet

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"sessdb/db"
	"sessdb/internal/etcdtest"
	"sessdb/internal/faults"
	"sessdb/migrate"
	"sessdb/store"
)

// A key dir still in the legacy layout (a transcript and sidecars, no
// meta.db) is left alone by FromEtcd: a meta.db made there would outrank
// the legacy conversation. A look at its legacy files that fails otherwise
// than "gone" (an I/O error, the kernel out of memory) says nothing about
// the key dir: the key fails on that error and nothing is made in it. It
// was taken for "no legacy file": meta.db was made beside the legacy
// conversation and the fleet's record written into it. ToEtcd fails it
// the same way.
func TestALegacyKeyDirNotLookedAtFailsTheKey(t *testing.T) {
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	key := store.Key("github", "legacy", "unread")
	f.run(key, "fleet 1")
	root := t.TempDir()
	dir := filepath.Join(root, key)
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for name, v := range map[string]string{store.TranscriptName: "{}\n", "venue": "local", "pi-version": "0.58.3"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(v), 0o600); err != nil {
			t.Fatal(err)
		}
	}

	reports, _ := runMigration(t, false, root, f.b, migOpts())
	if r := reports[key]; r.Action != Conflict || !strings.Contains(r.Cause, "legacy layout") {
		t.Fatalf("a legacy key dir: %s (%s); want %s, the legacy layout", r.Action, r.Cause, Conflict)
	}

	t.Cleanup(func() { faults.Set(nil) })
	faults.Set(func(p faults.Point) error {
		if p == faults.FleetMigrateLegacyLstat {
			return syscall.EIO
		}
		return nil
	})
	reports, sum := runMigration(t, false, root, f.b, migOpts())
	if r := reports[key]; r.Action != migrate.Failed || sum.Failed != 1 || !strings.Contains(r.Cause, syscall.EIO.Error()) {
		t.Errorf("a legacy key dir whose files could not be looked at: %s (%s), %+v; want the key failed on the lstat's error", r.Action, r.Cause, sum)
	}
	if _, err := os.Lstat(filepath.Join(dir, db.FileName)); !os.IsNotExist(err) {
		t.Errorf("FromEtcd made %s in a legacy key dir (lstat: %v)", db.FileName, err)
	}
	// ToEtcd of the same key dir, from its own root, fails on that error
	// too: skipped as holding nothing, the run would pass as complete.
	reports, sum = runMigration(t, true, root, f.b, migOpts())
	if r := reports[key]; r.Action != migrate.Failed || sum.Failed != 1 || !strings.Contains(r.Cause, syscall.EIO.Error()) {
		t.Errorf("to etcd, a legacy key dir whose files could not be looked at: %s (%s), %+v; want the key failed on the lstat's error", r.Action, r.Cause, sum)
	}
}
