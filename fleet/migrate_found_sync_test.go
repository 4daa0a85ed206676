package fleet

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"sessdb/fleet/internal/sharedfs"
	"sessdb/internal/durable"
	"sessdb/migrate"
	"sessdb/store"
)

// failingSyncOf is the disk with every fsync of the directory at path
// failing (EIO), as a disk that lost the write.
type failingSyncOf struct {
	durable.Disk
	path string
}

func (d failingSyncOf) SyncDir(dir *os.File) error {
	if dir.Name() == d.path {
		return &os.PathError{Op: "fsync", Path: dir.Name(), Err: unix.EIO}
	}
	return d.Disk.SyncDir(dir)
}

// migrate --from etcd that finds the sessions root, or a key's dir with
// no meta.db, made by another writer, and cannot fsync the dir holding
// it, reports no key migrated into it: the name may not be durable, and
// the key with it. The root's fsync fails the run; the key dir's, the
// key. Before, an fsync's error there was as good as a made one.
func TestMigrateFromEtcdThatCannotMakeAFoundDirDurableMigratesNothingIntoIt(t *testing.T) {
	for _, found := range []string{"root", "key dir"} {
		t.Run(found, func(t *testing.T) {
			f, parent := powerFixture(t)
			root := filepath.Join(parent, "s")
			key := store.Key("github", "migrate-sync", "found")
			f.run(key, "a")
			if err := os.Mkdir(root, 0o700); err != nil {
				t.Fatal(err)
			}
			failing := parent
			if found == "key dir" {
				if err := os.Mkdir(filepath.Join(root, key), 0o700); err != nil {
					t.Fatal(err)
				}
				failing = root
			}
			restore := sharedfs.Use(failingSyncOf{path: failing})
			var reports []MigrateReport
			sum, err := FromEtcd(context.Background(), f.b, root, migOpts(), func(r MigrateReport) error {
				reports = append(reports, r)
				return nil
			})
			restore()
			if found == "root" {
				if !errors.Is(err, unix.EIO) || sum.Migrated != 0 || len(reports) != 0 {
					t.Fatalf("migrate --from etcd into a root whose parent's fsync fails: %+v, %v, %d reports; want EIO, nothing migrated", sum, err, len(reports))
				}
				return
			}
			if err != nil || sum.Migrated != 0 || sum.Complete() || len(reports) != 1 || reports[0].Action != migrate.Failed || !strings.Contains(reports[0].Cause, unix.EIO.Error()) {
				t.Fatalf("migrate --from etcd into a key dir whose root's fsync fails: %+v, %v, reports %+v; want the key failed for EIO", sum, err, reports)
			}
		})
	}
}

// A dry run of migrate --from etcd fsyncs nothing: on a read-only mount
// (every fsync of a directory fails), a key dir it finds with no meta.db
// is planned as any key is, not failed for an fsync the run would make.
func TestMigrateFromEtcdDryRunFsyncsNoKeyDirItFinds(t *testing.T) {
	f, parent := powerFixture(t)
	root := filepath.Join(parent, "s")
	key := store.Key("github", "migrate-sync", "dry")
	f.run(key, "a")
	if err := os.MkdirAll(filepath.Join(root, key), 0o700); err != nil {
		t.Fatal(err)
	}
	opts := migOpts()
	opts.DryRun = true
	restore := sharedfs.Use(roDisk{})
	reports, sum := runMigration(t, false, root, f.b, opts)
	restore()
	if r := reports[key]; !sum.Complete() || sum.Migrated != 1 || r.Action != migrate.Migrated {
		t.Fatalf("a dry run on a read-only mount: %+v, the key %+v; want it planned migrated", sum, r)
	}
}
