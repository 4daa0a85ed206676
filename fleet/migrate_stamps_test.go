package fleet

import (
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sessdb/internal/etcdtest"
	"sessdb/migrate"
	"sessdb/store"
)

// Two sessions roots hold one key with the same bytes at the same
// generation, stamped by other jobs (venue local and pi 0.58.3 on the
// first host, venue docker and pi 0.60.0 on the second), each promoted on
// its own host (two histories). The first moves into the fleet; the
// second's --to etcd, dry run and run, is a conflict naming the stamps
// that differ, and etcd's record keeps the first's. A re-run of the first
// root stays already. Before, the second said already (exit 0) with the
// first's values, and its jobs, which resumed on their host, were
// venue-changed on the fleet with no word of why.
func TestMigrateToEtcdOfTheSameBytesWithOtherStampsIsAConflict(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	key := store.Key("github", "acme/widget", "two roots")
	hostA, hostB := filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")
	a, b := newHostBuilder(t, hostA), newHostBuilder(t, hostB)
	a.mustPromote(key, store.Job{PiVersion: "0.58.3", Venue: "local"}, "the same turn", store.PromoteRequest{})
	b.mustPromote(key, store.Job{PiVersion: "0.60.0", Venue: "docker"}, "the same turn", store.PromoteRequest{})

	if got, _ := runMigration(t, true, hostA, f.b, migOpts()); got[key].Action != migrate.Migrated {
		t.Fatalf("the first root: %+v; want migrated", got[key])
	}
	for _, dry := range []bool{true, false} {
		opts := migOpts()
		opts.DryRun = dry
		got, sum := runMigration(t, true, hostB, f.b, opts)
		r := got[key]
		if r.Action != Conflict || sum.Complete() || !strings.Contains(r.Cause, "same bytes") ||
			!strings.Contains(r.Cause, `venue "local" in etcd, "docker" in the key dir`) || !strings.Contains(r.Cause, `pi-version "0.58.3" in etcd, "0.60.0" in the key dir`) {
			t.Errorf("dry run %v: the second root: %+v; want a conflict naming the venue and the pi-version", dry, r)
		}
	}
	st, err := f.b.meta.Get(t.Context(), key)
	if err != nil || st.Record.Venue == nil || *st.Record.Venue != "local" || st.Record.PiVersion == nil || *st.Record.PiVersion != "0.58.3" {
		t.Fatalf("etcd's record after the second root: %+v, %v; want the first's stamps", st.Record, err)
	}
	if got, _ := runMigration(t, true, hostA, f.b, migOpts()); got[key].Action != migrate.Already || got[key].Cause != "" {
		t.Errorf("the first root again: %+v; want already", got[key])
	}
}

// The same the other way: the fleet's key (the first root's stamps)
// brought into the second root, which holds the same bytes at the same
// generation under its own stamps, is a conflict naming them, dry run and
// run, and the key dir is left as it was; into the first root it is
// already. Before, the second said already, and the fleet's jobs were
// judged there by the second root's stamps.
func TestMigrateFromEtcdOntoTheSameBytesWithOtherStampsIsAConflict(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	key := store.Key("github", "acme/widget", "two roots back")
	hostA, hostB := filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")
	a, b := newHostBuilder(t, hostA), newHostBuilder(t, hostB)
	a.mustPromote(key, store.Job{PiVersion: "0.58.3", Venue: "local"}, "the same turn", store.PromoteRequest{})
	b.mustPromote(key, store.Job{PiVersion: "0.58.3", Venue: "docker"}, "the same turn", store.PromoteRequest{})
	if got, _ := runMigration(t, true, hostA, f.b, migOpts()); got[key].Action != migrate.Migrated {
		t.Fatalf("the first root into the fleet: %+v", got[key])
	}
	before := treeOf(t, hostB)
	for _, dry := range []bool{true, false} {
		opts := migOpts()
		opts.DryRun = dry
		got, _ := runMigration(t, false, hostB, f.b, opts)
		if r := got[key]; r.Action != Conflict || !strings.Contains(r.Cause, `venue "local" in etcd, "docker" in the key dir`) || strings.Contains(r.Cause, "pi-version") {
			t.Errorf("dry run %v: the fleet into the second root: %+v; want a conflict naming the venue alone", dry, r)
		}
	}
	if after := treeOf(t, hostB); !maps.Equal(after, before) {
		t.Errorf("the second root changed: %v, was %v", after, before)
	}
	if got, _ := runMigration(t, false, hostA, f.b, migOpts()); got[key].Action != migrate.Already {
		t.Errorf("the fleet into the first root: %+v; want already", got[key])
	}
}

// A key dir whose promotion committed and whose temp was then damaged
// serves the generation before it under that promotion's stamps. Where
// etcd got that generation from this key dir (one history: the first
// root), the stamps moved after the move, on this key's own state, and
// both directions stay already (TestMigrateDryRunsOfADamagedPendingTempPlanWhatTheRunsDo
// too). Where the same bytes came from another root's own promotion (the
// second root, same bytes and stamps at gen 1, its own ticket), the lost
// promotion's stamps (venue docker) are another root's: a conflict both
// ways, dry run and run alike, naming the venue, and etcd keeps the first
// root's record.
func TestMigrateOfTheSameBytesUnderALostPromotionsStampsIsJudgedByItsHistory(t *testing.T) {
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	key := store.Key("github", "acme/widget", "lost promotion")
	hostA, hostB := filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")
	a, b := newHostBuilder(t, hostA), newHostBuilder(t, hostB)
	a.mustPromote(key, migJob, "the same turn", store.PromoteRequest{})
	b.mustPromote(key, migJob, "the same turn", store.PromoteRequest{})
	if got, _ := runMigration(t, true, hostA, f.b, migOpts()); got[key].Action != migrate.Migrated {
		t.Fatalf("the first root into the fleet: %+v", got[key])
	}
	if got, _ := runMigration(t, true, hostB, f.b, migOpts()); got[key].Action != migrate.Already {
		t.Fatalf("the second root, the same bytes and stamps: %+v; want already", got[key])
	}
	docker := migJob
	docker.Venue = "docker"
	for _, h := range []*hostBuilder{a, b} {
		h.crashAfterCommit(key, docker, "a turn lost")
		if err := os.Truncate(h.pendingTemp(key), 100); err != nil {
			t.Fatal(err)
		}
	}
	dry := migOpts()
	dry.DryRun = true
	for _, to := range []bool{true, false} {
		for _, opts := range []MigrateOptions{dry, migOpts()} {
			got, _ := runMigration(t, to, hostB, f.b, opts)
			if r := got[key]; r.Action != Conflict || !strings.Contains(r.Cause, "same bytes") || !strings.Contains(r.Cause, `venue "local" in etcd, "docker" in the key dir`) {
				t.Errorf("to etcd %v, dry run %v: the second root: %s %q; want a conflict naming the venue", to, opts.DryRun, r.Action, r.Cause)
			}
			got, _ = runMigration(t, to, hostA, f.b, opts)
			if r := got[key]; r.Action != migrate.Already {
				t.Errorf("to etcd %v, dry run %v: the first root: %s %q; want already", to, opts.DryRun, r.Action, r.Cause)
			}
		}
	}
	st, err := f.b.meta.Get(t.Context(), key)
	if err != nil || st.Record.Venue == nil || *st.Record.Venue != "local" {
		t.Fatalf("etcd's record: %+v, %v; want the first root's", st.Record, err)
	}
}
