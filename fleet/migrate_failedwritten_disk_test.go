package fleet

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"sessdb/db"
	"sessdb/fleet/internal/sharedfs"
	"sessdb/internal/durable"
	"sessdb/internal/etcdtest"
	"sessdb/migrate"
	"sessdb/store"
)

// failingRenameOrSync is the disk but for the rename to current.jsonl
// (rename) or the directory fsync after it (sync), which fails.
type failingRenameOrSync struct {
	durable.Disk
	rename  bool
	renamed *bool // the rename to current.jsonl has been made
}

var errDiskStep = errors.New("injected disk error")

func (d failingRenameOrSync) Rename(dir *os.File, from, to string) error {
	if d.rename && to == store.TranscriptName {
		return errDiskStep
	}
	err := d.Disk.Rename(dir, from, to)
	if err == nil && to == store.TranscriptName {
		*d.renamed = true
	}
	return err
}

func (d failingRenameOrSync) SyncDir(dir *os.File) error {
	if !d.rename && *d.renamed {
		return errDiskStep
	}
	return d.Disk.SyncDir(dir)
}

// --from etcd failed by the disk itself, at the rename of its temp to
// current.jsonl or at the directory fsync after it, names what is in
// place: meta.db alone where the rename failed (the temp is a promotion
// in flight), both once renamed. TestMigrateFromEtcdFailedNamesWhatWasWritten
// fails at fault points after each step, never at the step, so a report
// that named current.jsonl on a failed rename (mutant K04) or nothing on a
// failed fsync (K06) passed it.
func TestMigrateFromEtcdFailedByTheDiskNamesWhatIsInPlace(t *testing.T) {
	c := etcdtest.Start1(t)
	for _, rename := range []bool{true, false} {
		want := []string{store.TranscriptName, db.FileName}
		if rename {
			want = []string{db.FileName}
		}
		f := newFixture(t, c)
		key := store.Key("github", "acme/widget", "failed by the disk")
		f.run(key, "the fleet's")
		root := filepath.Join(t.TempDir(), "root")
		restore := sharedfs.Use(failingRenameOrSync{rename: rename, renamed: new(bool)})
		got, _ := runMigration(t, false, root, f.b, migOpts())
		restore()
		r := got[key]
		if r.Action != migrate.Failed || !slices.Equal(r.Written, want) {
			t.Errorf("rename fails %v: %+v; want failed, written %q", rename, r, want)
		}
		for _, n := range r.Written {
			if _, err := os.Lstat(filepath.Join(root, key, n)); err != nil {
				t.Errorf("rename fails %v: the report names %s written: %v", rename, n, err)
			}
		}
	}
}
