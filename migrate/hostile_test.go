package migrate

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"sessdb/internal/faults"
)

// TestHostileMetaDB: meta.db is a link (to a real meta.db outside the key
// dir, or dangling), a FIFO, or a directory. Either direction, dry run or
// not, fails the key naming meta.db, writes nothing through the link
// (the target's bytes, and a dangling link's absence of one, stay), never
// blocks on the FIFO, and leaves the key dir as it was.
func TestHostileMetaDB(t *testing.T) {
	for _, kind := range []string{"link", "dangling link", "fifo", "dir"} {
		root, key := oneKey(t)
		dir := filepath.Join(root, key)
		outside := filepath.Join(t.TempDir(), "outside")
		must(t, os.MkdirAll(outside, 0o700))
		// A real meta.db, with a record, outside the key dir.
		other, okey := oneKey(t)
		migrate(t, other, false, testOpts())
		target := filepath.Join(other, okey, "meta.db")
		targetBytes, err := os.ReadFile(target)
		must(t, err)
		meta := filepath.Join(dir, "meta.db")
		switch kind {
		case "link":
			must(t, os.Symlink(target, meta))
		case "dangling link":
			must(t, os.Symlink(filepath.Join(outside, "meta.db"), meta))
		case "fifo":
			must(t, syscall.Mkfifo(meta, 0o600))
		case "dir":
			must(t, os.Mkdir(meta, 0o700))
		}
		tree := treeState(t, dir, true, true)
		for _, toLegacy := range []bool{false, true} {
			for _, dry := range []bool{true, false} {
				opts := testOpts()
				opts.DryRun = dry
				got, sum := migrate(t, root, toLegacy, opts)
				if r := got[key]; r.Action != Failed || !strings.Contains(r.Cause, "meta.db") || sum.Complete() {
					t.Errorf("%s, %s, dry run %v: %+v", kind, direction(toLegacy), dry, r)
				}
				if d := diffStates(tree, treeState(t, dir, true, true)); d != "" {
					t.Errorf("%s, %s, dry run %v: the key dir changed:\n%s", kind, direction(toLegacy), dry, d)
				}
			}
		}
		if b, err := os.ReadFile(target); err != nil || string(b) != string(targetBytes) {
			t.Errorf("%s: the link's target changed (%v)", kind, err)
		}
		if _, err := os.Lstat(filepath.Join(outside, "meta.db")); !os.IsNotExist(err) {
			t.Errorf("%s: something was made at the dangling link's target: %v", kind, err)
		}
	}
}

// TestKeyDirSwappedDuringTheMigration: between the commit and the removal
// of the legacy files, the key dir is renamed away and another dir put at
// its name (with a legacy venue of its own, and a link named like a
// sidecar). The migration acts on the dir it opened and locked, wherever
// it now is: the values it committed there stay with the files they
// describe, and nothing in the new dir at the name is read, removed or
// written. Sparse sidecars of 4 GiB are not read either.
func TestKeyDirSwappedDuringTheMigration(t *testing.T) {
	root, key := oneKey(t)
	dir := filepath.Join(root, key)
	for _, n := range []string{"context", "resume-chain"} {
		must(t, os.Truncate(filepath.Join(dir, n), 4<<30))
	}
	moved := filepath.Join(t.TempDir(), "moved")
	t.Cleanup(func() { faults.Set(nil) })
	var newTree map[string]string
	faults.Set(migrateOnly(func(p faults.Point) error {
		if p != faults.ToDBCommitted || newTree != nil {
			return nil
		}
		must(t, os.Rename(dir, moved))
		must(t, os.Mkdir(dir, 0o700))
		must(t, os.WriteFile(filepath.Join(dir, "venue"), []byte("podman"), 0o600))
		must(t, os.Symlink(filepath.Join(moved, "current.jsonl"), filepath.Join(dir, "pi-version")))
		newTree = treeState(t, dir, true, true)
		return nil
	}))
	got, _ := migrate(t, root, false, testOpts())
	faults.Set(nil)
	if newTree == nil {
		t.Fatal("the hook did not run")
	}
	if r := got[key]; r.Action != Migrated || len(r.Removed) != 4 {
		t.Errorf("migrate: %+v", r)
	}
	if d := diffStates(newTree, treeState(t, dir, true, true)); d != "" {
		t.Errorf("the dir now at the key's name changed:\n%s", d)
	}
	names, err := os.ReadDir(moved)
	must(t, err)
	var left []string
	for _, n := range names {
		left = append(left, n.Name())
	}
	if strings.Join(left, " ") != "current.jsonl meta.db" {
		t.Errorf("the dir the migration locked holds %v, want current.jsonl meta.db", left)
	}
	if sc, ok := dbValues(t, moved); !ok || sc.Transcript == nil || sc.Context != nil {
		t.Errorf("its meta.db: %s", fmtSidecars(sc))
	}
}
