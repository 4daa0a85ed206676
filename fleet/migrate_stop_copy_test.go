package fleet

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"sessdb/internal/etcdtest"
	"sessdb/internal/faults"
	"sessdb/migrate"
	"sessdb/store"
)

// A migration --to etcd stopped (Ctrl-C, SIGTERM) around a key's copy
// into the transcripts dir leaves the key as it was, unprinted, and no
// file of it: at the copy's start, and once the copy is done (the stop
// came during its fsync, or between its return and the create) but before
// the create was sent. Before, a stop that came once the copy was done
// had the create sent with the stopped ctx: it ended at once, unanswered,
// and the key was printed failed ("create KEY: context canceled (the file
// ... is left for reap)"), the file kept, named in written, as one whose
// create might have landed; the re-run wrote the key a second file and
// the first stayed, no record naming it, until a reap past its grace. An
// `already` key whose missing file the stop cut at its copy is likewise
// left unprinted, nothing written.
func TestAMigrationStoppedAroundItsCopyLeavesNoFile(t *testing.T) {
	c := etcdtest.Start1(t)
	for _, tc := range []struct {
		name  string
		moved bool // the key is in etcd already, its file missing
		hook  string
		fault faults.Point
		again migrate.Action
	}{
		{"at its copy", false, hookMigrateCopy, "", migrate.Migrated},
		{"at its copy's fsync", false, "", faults.SharedWriteSync, migrate.Migrated},
		{"its copy done, its create not sent", false, "", faults.ToEtcdWritten, migrate.Migrated},
		{"already, at its missing file's copy", true, hookMigrateCopy, "", migrate.Already},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, c)
			key := store.Key("github", "migrate-stop-copy", tc.name)
			root := promotedOnHost(t, key, "a")
			var recorded string
			if tc.moved {
				if got, _ := runMigration(t, true, root, f.b, migOpts()); got[key].Action != migrate.Migrated {
					t.Fatalf("the key's first move: %+v", got[key])
				}
				recorded = f.recordFile(key)
				if err := os.Remove(filepath.Join(f.dir, recorded)); err != nil {
					t.Fatal(err)
				}
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			stops := 0
			f.b.hook = func(point, k string) error {
				if point == tc.hook && k == key {
					stops++
					cancel()
				}
				return nil
			}
			faults.Set(func(p faults.Point) error {
				if p == tc.fault {
					stops++
					cancel()
				}
				return nil
			})
			t.Cleanup(func() { faults.Set(nil) })
			var got []MigrateReport
			sum, err := ToEtcd(ctx, root, f.b, migOpts(), func(r MigrateReport) error { got = append(got, r); return nil })
			faults.Set(nil)
			f.b.hook = nil
			if stops != 1 || !errors.Is(err, context.Canceled) || !sum.Interrupted {
				t.Fatalf("stopped %s (%d stops): %+v, %v; want context.Canceled, interrupted", tc.name, stops, sum, err)
			}
			if len(got) != 0 || sum.Entries != 0 {
				t.Errorf("stopped %s: printed %+v (%d entries); want the key left as a key never started", tc.name, got, sum.Entries)
			}
			if files := f.files(key); len(files) != 0 {
				t.Errorf("stopped %s: the key's files %v; want none", tc.name, files)
			}
			if now := f.recordFileOrErr(key); now != recorded {
				t.Errorf("stopped %s: the record names %q; want %q", tc.name, now, recorded)
			}
			again, _ := runMigration(t, true, root, f.b, migOpts())
			if r := again[key]; r.Action != tc.again {
				t.Fatalf("the re-run: %s (%s); want %s", r.Action, r.Cause, tc.again)
			}
			f.holds(key, "a", 1)
			if files := f.files(key); !slices.Equal(files, []string{f.recordFile(key)}) {
				t.Errorf("the key's files after the re-run: %v; want its record's alone (%s)", files, f.recordFile(key))
			}
		})
	}
}
