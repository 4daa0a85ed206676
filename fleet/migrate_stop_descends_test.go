package fleet

import (
	"context"
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
	"testing"

	"sessdb/db"
	"sessdb/internal/etcdtest"
	"sessdb/internal/faults"
	"sessdb/migrate"
	"sessdb/store"
)

// Where a key dir's history does not say whether the fleet's generation
// descends from the key dir's (here a meta.db with no history), the
// migrations read the fleet's file for the key dir's bytes (descends'
// beginsWith): --from etcd to bring the key forward, --to etcd to call
// it already. That read looked at no ctx: stopped (Ctrl-C, SIGTERM)
// there, it read on to the prefix's end, gigabytes possibly, and a dry
// run (or --to etcd, which has no step after it) then printed the key
// and returned a complete summary, Interrupted false, nil error. A read
// that merely stopped would have been taken for a file that does not
// begin so: a conflict, wrongly reported. Now the read ends within a
// read of the stop (fault point fleet-migrate/descends), the key is not
// printed (nothing was done to it), the root is as it was, the run is
// interrupted, and a re-run finishes the key.
func TestAMigrationStoppedWhileItReadsWhetherTheFleetDescendsIsAStop(t *testing.T) {
	c := etcdtest.Start1(t)
	const stopAt = 3 // the read of the fleet's file at which the stop comes
	for _, tc := range []struct {
		name    string
		to, dry bool
		again   migrate.Action
	}{
		{name: "from etcd", again: migrate.Migrated},
		{name: "from etcd, a dry run", dry: true, again: migrate.Migrated},
		{name: "to etcd", to: true, again: migrate.Already},
		{name: "to etcd, a dry run", to: true, dry: true, again: migrate.Already},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, c)
			key := store.Key("github", "migrate-stop-descends", tc.name)
			// The fleet's gen 1, of 256 KiB, and its gen 2, which begins
			// with gen 1's bytes.
			f.run(key, bigMarker)
			gen1, err := os.ReadFile(filepath.Join(f.dir, f.recordFile(key)))
			if err != nil {
				t.Fatal(err)
			}
			f.run(key, "fleet 2")
			// A key dir holding gen 1, its meta.db with no history.
			root := t.TempDir()
			kd := filepath.Join(root, key)
			if err := os.Mkdir(kd, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(kd, store.TranscriptName), gen1, 0o600); err != nil {
				t.Fatal(err)
			}
			v := migPi
			updateMeta(t, kd, func(tx *db.Tx) error {
				return tx.PutSidecars(db.Sidecars{PiVersion: &v, Transcript: &db.Transcript{Gen: 1, Size: int64(len(gen1)),
					CRC32C: uint64(crc32.Checksum(gen1, crc32.MakeTable(crc32.Castagnoli))), PromotedAt: migNow.UnixNano()}})
			})
			tree := treeOf(t, root)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			reads, reached := 0, 0
			faults.Set(func(p faults.Point) error {
				if p == faults.FleetMigrateDescends {
					if reads++; reads == stopAt {
						cancel()
					}
				}
				return nil
			})
			t.Cleanup(func() { faults.Set(nil) })
			f.b.hook = func(p, k string) error {
				if p == hookMigrateCopy && k == key {
					reached++
				}
				return nil
			}
			var got []MigrateReport
			visit := func(r MigrateReport) error { got = append(got, r); return nil }
			opts := migOpts()
			opts.DryRun = tc.dry
			var sum MigrateSummary
			if tc.to {
				sum, err = ToEtcd(ctx, root, f.b, opts, visit)
			} else {
				sum, err = FromEtcd(ctx, f.b, root, opts, visit)
			}
			faults.Set(nil)
			f.b.hook = nil
			if !errors.Is(err, context.Canceled) || !sum.Interrupted {
				t.Errorf("stopped as it read the fleet's file: %+v, %v; want context.Canceled, interrupted", sum, err)
			}
			if reads != stopAt || reached != 0 {
				t.Errorf("stopped at the read %d of the fleet's file: %d reads in all, the copy reached %d times; want no read after the stop, and no copy", stopAt, reads, reached)
			}
			if len(got) != 0 {
				t.Errorf("the key the stop cut before anything was done was printed: %+v; want it left as a key never started", got)
			}
			if now := treeOf(t, root); diffMaps(tree, now) != "" {
				t.Errorf("the root after the stop: %s; want it as it was", diffMaps(tree, now))
			}
			again, _ := runMigration(t, tc.to, root, f.b, migOpts())
			if r := again[key]; r.Action != tc.again {
				t.Fatalf("the re-run: %s %v (%s); want %s", r.Action, r.Written, r.Cause, tc.again)
			}
		})
	}
}
