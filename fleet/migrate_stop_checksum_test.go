package fleet

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sessdb/internal/etcdtest"
	"sessdb/internal/faults"
	"sessdb/migrate"
	"sessdb/store"
)

// bigMarker is a marker of 256 KiB: a transcript holding it takes a
// checksum eight reads and more (io.Copy's 32 KiB each).
var bigMarker = strings.Repeat("m", 256<<10)

// The fleet migrations read a file whole for its size and CRC32C (checksum)
// with no ctx: --to etcd the key dir's transcript (a dry run's too),
// --from etcd the generation in the transcripts dir and the key dir's
// transcript in place. Stopped (Ctrl-C, SIGTERM) during that read, each
// read on to the file's end, gigabytes possibly, and only the step after
// it saw the stop. Now the read ends within a read of the stop: the stop
// comes at a read after the file's first few (the checksum's fault
// point), and no read follows it; nor does the key's next step (its etcd
// read, its copy). A key in which nothing was done is left as it was and
// not printed; one whose promotion in flight was rolled forward first is
// printed failed, saying so; and a re-run finishes each.
func TestAMigrationStoppedDuringAChecksumReadsNoFurther(t *testing.T) {
	c := etcdtest.Start1(t)
	const stopAt = 3 // the read at which the stop comes: the file's third
	for _, tc := range []struct {
		name    string
		to, dry bool
		// setup makes the key's state; it returns how many checksum
		// reads come before the file the stop is for (0: it is the
		// first read).
		setup   func(t *testing.T, f *fixture, h *hostBuilder, key string) int
		next    string // the hook the key's next step calls, which must not be reached
		printed migrate.Action
		cause   string
		again   migrate.Action
	}{
		{
			name: "to etcd, the key dir's transcript", to: true,
			setup: func(t *testing.T, f *fixture, h *hostBuilder, key string) int {
				h.mustPromote(key, migJob, bigMarker, store.PromoteRequest{})
				return 0
			},
			next: hookMigrateRead, again: migrate.Migrated,
		},
		{
			name: "to etcd, a dry run's read of the key dir's transcript", to: true, dry: true,
			setup: func(t *testing.T, f *fixture, h *hostBuilder, key string) int {
				h.mustPromote(key, migJob, bigMarker, store.PromoteRequest{})
				return 0
			},
			next: hookMigrateRead, again: migrate.Migrated,
		},
		{
			name: "to etcd, the transcript a roll-forward put in place", to: true,
			setup: func(t *testing.T, f *fixture, h *hostBuilder, key string) int {
				h.mustPromote(key, migJob, "m1", store.PromoteRequest{})
				h.crashAfterCommit(key, migJob, bigMarker)
				return 0
			},
			next: hookMigrateRead, printed: migrate.Failed, cause: "rolled forward only", again: migrate.Migrated,
		},
		{
			name: "from etcd, the generation in the transcripts dir",
			setup: func(t *testing.T, f *fixture, h *hostBuilder, key string) int {
				h.mustPromote(key, migJob, bigMarker, store.PromoteRequest{})
				if got, _ := runMigration(t, true, h.root, f.b, migOpts()); got[key].Action != migrate.Migrated {
					t.Fatalf("the first move: %+v", got[key])
				}
				if err := os.RemoveAll(h.path(key)); err != nil {
					t.Fatal(err)
				}
				return 0
			},
			next: hookMigrateCopy, again: migrate.Migrated,
		},
		{
			name: "from etcd, the key dir's transcript in place",
			setup: func(t *testing.T, f *fixture, h *hostBuilder, key string) int {
				return movedAndPromotedByTheFleet(t, f, h, key)
			},
			next: hookMigrateCopy, again: migrate.Migrated,
		},
		{
			name: "from etcd, a dry run's read of the key dir's transcript in place", dry: true,
			setup: func(t *testing.T, f *fixture, h *hostBuilder, key string) int {
				return movedAndPromotedByTheFleet(t, f, h, key)
			},
			next: hookMigrateCopy, again: migrate.Migrated,
		},
		{
			// A dry run lists the stray promotion temp its run would
			// sweep (Removed) and sweeps nothing: stopped, it did
			// nothing, and the key is left unprinted, as a dry run's key
			// without one is, not printed failed as a run's whose debris
			// was swept.
			name: "from etcd, a dry run's read of the key dir's transcript in place, a stray temp beside it", dry: true,
			setup: func(t *testing.T, f *fixture, h *hostBuilder, key string) int {
				before := movedAndPromotedByTheFleet(t, f, h, key)
				if err := os.WriteFile(filepath.Join(h.path(key), storeTempPrefix+"stray"), []byte("debris"), 0o600); err != nil {
					t.Fatal(err)
				}
				return before
			},
			next: hookMigrateCopy, again: migrate.Migrated,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, c)
			h := newHostBuilder(t, t.TempDir())
			key := store.Key("github", "migrate-stop-checksum", tc.name)
			before := tc.setup(t, f, h, key)
			tree := treeOf(t, h.root)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			reads, reached := 0, 0
			faults.Set(func(p faults.Point) error {
				if p == faults.FleetMigrateChecksum {
					if reads++; reads == before+stopAt {
						cancel()
					}
				}
				return nil
			})
			t.Cleanup(func() { faults.Set(nil) })
			f.b.hook = func(p, k string) error {
				if p == tc.next && k == key {
					reached++
				}
				return nil
			}
			var got []MigrateReport
			visit := func(r MigrateReport) error { got = append(got, r); return nil }
			opts := migOpts()
			opts.DryRun = tc.dry
			var sum MigrateSummary
			var err error
			if tc.to {
				sum, err = ToEtcd(ctx, h.root, f.b, opts, visit)
			} else {
				sum, err = FromEtcd(ctx, f.b, h.root, opts, visit)
			}
			faults.Set(nil)
			f.b.hook = nil
			if !errors.Is(err, context.Canceled) || !sum.Interrupted {
				t.Fatalf("stopped during the checksum: %+v, %v; want context.Canceled, interrupted", sum, err)
			}
			if reads != before+stopAt || reached != 0 {
				t.Errorf("stopped at the checksum's read %d of its file: %d reads in all (%d before the file), the next step (%s) reached %d times; want no read after the stop, and the step not reached",
					stopAt, reads, before, tc.next, reached)
			}
			switch {
			case tc.printed == "" && len(got) != 0:
				t.Errorf("the key the stop cut before anything was done was printed: %+v; want it left as a key never started", got)
			case tc.printed != "" && (len(got) != 1 || got[0].Action != tc.printed || !strings.Contains(got[0].Cause, tc.cause) || len(got[0].Written) != 0):
				t.Errorf("the key the stop cut: %+v; want it printed %s, saying %q, nothing written", got, tc.printed, tc.cause)
			}
			if tc.printed == "" {
				if now := treeOf(t, h.root); diffMaps(tree, now) != "" {
					t.Errorf("the root after the stop: %s; want it as it was", diffMaps(tree, now))
				}
			}
			if tc.to {
				if files := f.files(key); len(files) != 0 {
					t.Errorf("the key's files after the stop: %v; want none", files)
				}
				if file := f.recordFileOrErr(key); file != "" {
					t.Errorf("etcd's record after the stop names %s; want none", file)
				}
			}
			opts.DryRun = false
			again, _ := runMigration(t, tc.to, h.root, f.b, opts)
			if r := again[key]; r.Action != tc.again {
				t.Fatalf("the re-run: %s %v (%s); want %s", r.Action, r.Written, r.Cause, tc.again)
			}
		})
	}
}

// movedAndPromotedByTheFleet makes key a key dir of 256 KiB moved to etcd
// and promoted since by the fleet (its history holds the key dir's), for
// --from etcd to bring forward, and
// returns how many checksum reads that run makes of the fleet's
// generation before it reads the key dir's transcript in place: those of
// a dry run onto an empty root, which reads only the generation.
func movedAndPromotedByTheFleet(t *testing.T, f *fixture, h *hostBuilder, key string) int {
	t.Helper()
	h.mustPromote(key, migJob, bigMarker, store.PromoteRequest{})
	if got, _ := runMigration(t, true, h.root, f.b, migOpts()); got[key].Action != migrate.Migrated {
		t.Fatalf("the first move: %+v", got[key])
	}
	if res := f.run(key, "m2"); !res.Promoted {
		t.Fatalf("the fleet's promotion: %+v", res)
	}
	reads := 0
	faults.Set(func(p faults.Point) error {
		if p == faults.FleetMigrateChecksum {
			reads++
		}
		return nil
	})
	defer faults.Set(nil)
	opts := migOpts()
	opts.DryRun = true
	if got, _ := runMigration(t, false, t.TempDir(), f.b, opts); got[key].Action != migrate.Migrated || reads == 0 {
		t.Fatalf("a dry run onto an empty root: %+v, %d reads; want migrated, the generation read", got[key], reads)
	}
	return reads
}
