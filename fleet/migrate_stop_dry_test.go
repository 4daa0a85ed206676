package fleet

import (
	"context"
	"errors"
	"os"
	"testing"

	"sessdb/internal/etcdtest"
	"sessdb/internal/faults"
	"sessdb/migrate"
	"sessdb/store"
)

// A dry run of --to etcd or --from etcd reads a pending promotion's temp
// whole to plan what the run's roll-forward does; a stop (Ctrl-C, a Go
// caller's cancel) ends that read. The key, of which nothing was planned,
// is left unprinted as a key never started, and the run is interrupted:
// printed, it would be failed "context canceled", the run exit 1 as if
// the key could not be migrated. Here the stop comes as the dry run opens
// the key's meta.db, just before the read.
func TestADryRunStoppedAtAPromotionsTempPrintsNothing(t *testing.T) {
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	root := t.TempDir()
	h := newHostBuilder(t, root)
	key := store.Key("github", "migrate-stop-dry", "a")
	h.mustPromote(key, migJob, "a1", store.PromoteRequest{})
	if got, _ := runMigration(t, true, root, f.b, migOpts()); got[key].Action != migrate.Migrated {
		t.Fatalf("the key's first move: %+v", got[key])
	}
	h.crashAfterCommit(key, migJob, "a2")
	temp := h.pendingTemp(key)
	for _, to := range []bool{true, false} {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		stops := 0
		faults.Set(func(p faults.Point) error {
			if p == faults.DBOpenBeforeLock && ctx.Err() == nil {
				stops++
				cancel()
			}
			return nil
		})
		t.Cleanup(func() { faults.Set(nil) })
		opts := migOpts()
		opts.DryRun = true
		var got []MigrateReport
		visit := func(r MigrateReport) error { got = append(got, r); return nil }
		var sum MigrateSummary
		var err error
		if to {
			sum, err = ToEtcd(ctx, root, f.b, opts, visit)
		} else {
			sum, err = FromEtcd(ctx, f.b, root, opts, visit)
		}
		faults.Set(nil)
		if stops != 1 || !errors.Is(err, context.Canceled) || !sum.Interrupted {
			t.Fatalf("to etcd %v: a dry run stopped at the key's temp (%d stops): %+v, %v; want context.Canceled, interrupted", to, stops, sum, err)
		}
		if len(got) != 0 {
			t.Errorf("to etcd %v: a dry run stopped at the key's temp printed %+v; want nothing", to, got)
		}
		if _, err := os.Lstat(temp); err != nil {
			t.Errorf("to etcd %v: the temp after the dry run: %v", to, err)
		}
	}
	// The dry run not stopped plans the key (a conflict: the key dir
	// was promoted since etcd got it).
	for _, to := range []bool{true, false} {
		opts := migOpts()
		opts.DryRun = true
		if got, _ := runMigration(t, to, root, f.b, opts); got[key].Action != Conflict {
			t.Errorf("to etcd %v: the dry run not stopped: %q (%s); want conflict", to, got[key].Action, got[key].Cause)
		}
	}
}

// The same stop as the --to etcd dry run's read of the temp begins (its
// fault point): the read ends there, and the key is cut before anything
// after it. Given context.Background() (mutlate49's T16), the read went on
// to the temp's end and the run reached the key's etcd read (cut there, so
// the same report, only later): the etcd read is not reached now.
func TestADryRunStoppedAsItReadsAPromotionsTempReadsNoFurther(t *testing.T) {
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	root := t.TempDir()
	h := newHostBuilder(t, root)
	key := store.Key("github", "migrate-stop-dry", "read")
	h.mustPromote(key, migJob, "a1", store.PromoteRequest{})
	h.crashAfterCommit(key, migJob, "a2")
	temp := h.pendingTemp(key)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stops, etcdReads := 0, 0
	faults.Set(func(p faults.Point) error {
		if p == faults.PendingTempCheck {
			stops++
			cancel()
		}
		return nil
	})
	t.Cleanup(func() { faults.Set(nil) })
	f.b.hook = func(p, k string) error {
		if p == hookMigrateRead && k == key {
			etcdReads++
		}
		return nil
	}
	opts := migOpts()
	opts.DryRun = true
	var got []MigrateReport
	sum, err := ToEtcd(ctx, root, f.b, opts, func(r MigrateReport) error { got = append(got, r); return nil })
	faults.Set(nil)
	f.b.hook = nil
	if stops != 1 || !errors.Is(err, context.Canceled) || !sum.Interrupted || len(got) != 0 {
		t.Fatalf("a dry run stopped as it read the key's temp (%d stops): %+v, %v, printed %+v; want context.Canceled, interrupted, nothing printed", stops, sum, err, got)
	}
	if etcdReads != 0 {
		t.Errorf("the dry run went on to the key's etcd read %d times after the stop at its temp's read; want none", etcdReads)
	}
	if _, err := os.Lstat(temp); err != nil {
		t.Errorf("the temp after the dry run: %v", err)
	}
	opts.DryRun = true
	if got, _ := runMigration(t, true, root, f.b, opts); got[key].Action != migrate.Migrated {
		t.Errorf("the dry run not stopped: %q (%s); want migrated", got[key].Action, got[key].Cause)
	}
}
