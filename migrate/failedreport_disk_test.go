package migrate

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"sessdb/internal/durable"
	"sessdb/store"
)

// failingDisk is the disk but for one operation on one name, which fails.
type failingDisk struct {
	durable.Disk
	op, name string // "remove" or "rename" (its target)
}

var errDisk = errors.New("injected disk error")

func (d failingDisk) Remove(dir *os.File, name string) error {
	if d.op == "remove" && name == d.name {
		return errDisk
	}
	return d.Disk.Remove(dir, name)
}

func (d failingDisk) Rename(dir *os.File, from, to string) error {
	if d.op == "rename" && to == d.name {
		return errDisk
	}
	return d.Disk.Rename(dir, from, to)
}

// A key failed by the disk itself (a removal or a rename refused), not
// at a fault point after a step that landed, reports what it changed: each
// name listed removed is gone and each gone one is listed, each listed
// written is there. The fault-point tests fail only after a step, so a
// report that kept the plan's removals on a failed unlink (mutant M09, to
// meta.db; M17b, --to-legacy's meta.db) or listed a file whose rename
// failed (M19) passed them.
func TestAKeyFailedByTheDiskReportsWhatItChanged(t *testing.T) {
	key := store.Key("github", "acme/widget", "failed by the disk")
	for _, c := range []struct {
		name     string
		toLegacy bool
		disk     failingDisk
	}{
		{"to-db, a sidecar's unlink", false, failingDisk{op: "remove", name: "venue"}},
		{"to-legacy, meta.db's unlink", true, failingDisk{op: "remove", name: "meta.db"}},
		{"to-legacy, a sidecar's rename", true, failingDisk{op: "rename", name: "venue"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			dir := filepath.Join(root, key)
			must(t, os.Mkdir(dir, 0o700))
			for n, b := range map[string]string{
				"current.jsonl": `{"type":"session","version":3,"id":"x","timestamp":"2026-11-30T10:00:00Z","cwd":"/w"}` + "\n",
				"pi-version":    "0.58.3", "venue": "local", "resume-chain": "2",
			} {
				must(t, os.WriteFile(filepath.Join(dir, n), []byte(b), 0o600))
				at := testNow.Add(-time.Hour)
				must(t, os.Chtimes(filepath.Join(dir, n), at, at))
			}
			if c.toLegacy {
				if got, sum := migrate(t, root, false, testOpts()); !sum.Complete() || got[key].Action != Migrated {
					t.Fatalf("to-db: %+v", got[key])
				}
			}
			dry := testOpts()
			dry.DryRun = true
			plans, _ := migrate(t, root, c.toLegacy, dry)
			opts := testOpts()
			opts.disk = c.disk
			got, _ := migrate(t, root, c.toLegacy, opts)
			r := got[key]
			if r.Action != Failed {
				t.Fatalf("report %+v; want the key failed", r)
			}
			for _, n := range r.Removed {
				if _, err := os.Lstat(filepath.Join(dir, n)); !os.IsNotExist(err) {
					t.Errorf("the report says %s removed; it is there (%v): %+v", n, err, r)
				}
			}
			for _, n := range plans[key].Removed {
				if _, err := os.Lstat(filepath.Join(dir, n)); os.IsNotExist(err) && !slices.Contains(r.Removed, n) {
					t.Errorf("%s is gone, and the report does not list it removed: %+v", n, r)
				}
			}
			for _, n := range r.Written {
				if _, err := os.Lstat(filepath.Join(dir, n)); err != nil {
					t.Errorf("the report says %s written; %v: %+v", n, err, r)
				}
			}
		})
	}
}
