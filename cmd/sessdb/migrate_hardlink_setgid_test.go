package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// nobody's own hard-linked meta.db in a group nobody is not in (root's),
// in a key dir that is set-group-ID of that group: a writer's copy made
// there is given the dir's group by the kernel, so its chown to meta.db's
// owner and group changes nothing and is allowed, and the run migrates
// the key. Its dry run plans it too (db.MayOwnCopy takes the copy's
// group from a set-group-ID dir), exit 0, as the run.
func TestAMigrationsDryRunPlansAHardLinkedMetaDBInASetGroupIDKeyDir(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run the migration as nobody and give meta.db root's group")
	}
	w := newNobodysWorker(t)
	if _, promoted := w.job("job-1"); !strings.Contains(promoted, `"promoted":true`) {
		t.Fatalf("promote: %s", promoted)
	}
	kd := filepath.Join(w.root, workerKey)
	if err := os.Link(filepath.Join(kd, "meta.db"), filepath.Join(w.base, "meta.db.link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(filepath.Join(kd, "meta.db"), nobody, 0); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(kd, nobody, 0); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(kd, 0o700|os.ModeSetgid); err != nil {
		t.Fatal(err)
	}
	dcode, dout, derrs := w.runAs("migrate", "--to-legacy", "--dry-run", w.root)
	if dcode != exitOK {
		t.Errorf("dry run: exit %d, want 0 as the run\nstdout:\n%s\nstderr:\n%s", dcode, dout, derrs)
	}
	if code, out, errs := w.runAs("migrate", "--to-legacy", w.root); code != exitOK {
		t.Errorf("run: exit %d, want 0 (the copy takes the set-group-ID dir's group)\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
}
