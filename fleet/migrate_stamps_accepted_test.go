package fleet

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sessdb/internal/etcdtest"
	"sessdb/migrate"
	"sessdb/store"
)

// A key dir whose generation an operator's check --repair --accept made
// (its history's entry for it is "accepted", not a promotion's) is one
// lineage with the etcd record it moved into, as a promoted one is: once
// a promotion committed after the move loses its temp, the key dir serves
// that generation under the lost promotion's stamps, and a re-run either
// way, dry run and run, is already, etcd's stamps kept. Before, only a
// promotion's entry told the lineage: the accepted generation had none, so
// each re-run said conflict ("another history"), exit 1, for the key's
// own state, where fleet.md says already.
func TestMigrateOfAnAcceptedGenerationUnderALostPromotionsStampsIsAlready(t *testing.T) {
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	key := store.Key("github", "acme/widget", "accepted then lost")
	hostA := filepath.Join(t.TempDir(), "a")
	a := newHostBuilder(t, hostA)
	a.mustPromote(key, migJob, "a turn", store.PromoteRequest{})
	edited := append(convo(migNow.Add(-48*time.Hour)), markerLine("edited by hand")...)
	if err := os.WriteFile(a.path(key, store.TranscriptName), edited, 0o600); err != nil {
		t.Fatal(err)
	}
	if res, err := a.s.Accept(key); err != nil || res.Already || res.Gen != 2 {
		t.Fatalf("accept: %+v, %v; want gen 2", res, err)
	}
	if got, _ := runMigration(t, true, hostA, f.b, migOpts()); got[key].Action != migrate.Migrated {
		t.Fatalf("the root into the fleet: %+v", got[key])
	}
	docker := migJob
	docker.Venue = "docker"
	a.crashAfterCommit(key, docker, "a turn lost")
	if err := os.Truncate(a.pendingTemp(key), 100); err != nil {
		t.Fatal(err)
	}
	dry := migOpts()
	dry.DryRun = true
	for _, to := range []bool{true, false} {
		for _, opts := range []MigrateOptions{dry, migOpts()} {
			got, _ := runMigration(t, to, hostA, f.b, opts)
			if r := got[key]; r.Action != migrate.Already || strings.Contains(r.Cause, "other stamps") {
				t.Errorf("to etcd %v, dry run %v: %s %q; want already", to, opts.DryRun, r.Action, r.Cause)
			}
		}
	}
	st, err := f.b.meta.Get(t.Context(), key)
	if err != nil || st.Record.Venue == nil || *st.Record.Venue != "local" || st.Record.Transcript == nil || st.Record.Transcript.Gen != 2 {
		t.Fatalf("etcd's record: %+v, %v; want gen 2, venue local", st.Record, err)
	}
}

// The same for a key migrated from the legacy layout, whose meta.db holds
// no history (here: to the legacy layout and back): no entry made the
// generation it moved, but its lost promotion's record names the
// generation it replaced (db.Pending.Prev), which is etcd's to the
// nanosecond of its promotion: one lineage, already, dry run and run,
// either way, etcd's stamps kept. A second root holding the same bytes,
// promoted there at another time under another venue, moved from the
// legacy layout likewise and with a lost promotion of its own, is still
// a conflict naming the venue. Before, the first root was a conflict at
// every re-run too (the key's own state, exit 1; fleet.md said nothing
// could tell it).
func TestMigrateOfALegacyBornGenerationUnderALostPromotionsStampsIsAlready(t *testing.T) {
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	key := store.Key("github", "acme/widget", "legacy then lost")
	hostA, hostB := filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")
	a, b := newHostBuilder(t, hostA), newHostBuilder(t, hostB)
	a.mustPromote(key, migJob, "a turn", store.PromoteRequest{})
	other := migJob
	other.Venue = "docker"
	b.now = b.now.Add(-time.Minute)
	b.mustPromote(key, other, "a turn", store.PromoteRequest{})
	for _, root := range []string{hostA, hostB} {
		for _, to := range []func(string, migrate.Options, func(migrate.Report) error) (migrate.Summary, error){migrate.ToLegacy, migrate.ToDB} {
			if _, err := to(root, migrate.Options{}, func(migrate.Report) error { return nil }); err != nil {
				t.Fatal(err)
			}
		}
	}
	if got, _ := runMigration(t, true, hostA, f.b, migOpts()); got[key].Action != migrate.Migrated {
		t.Fatalf("the root into the fleet: %+v", got[key])
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
			got, _ := runMigration(t, to, hostA, f.b, opts)
			if r := got[key]; r.Action != migrate.Already || strings.Contains(r.Cause, "other stamps") {
				t.Errorf("to etcd %v, dry run %v: %s %q; want already", to, opts.DryRun, r.Action, r.Cause)
			}
			got, _ = runMigration(t, to, hostB, f.b, opts)
			if r := got[key]; r.Action != Conflict || !strings.Contains(r.Cause, `venue "local" in etcd, "docker" in the key dir`) {
				t.Errorf("the second root, to etcd %v, dry run %v: %s %q; want a conflict naming the venue", to, opts.DryRun, r.Action, r.Cause)
			}
		}
	}
	st, err := f.b.meta.Get(t.Context(), key)
	if err != nil || st.Record.Venue == nil || *st.Record.Venue != "local" {
		t.Fatalf("etcd's record: %+v, %v; want venue local", st.Record, err)
	}
}
