package fleet_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"sessdb/fleet"
	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// A migration whose context ends while it compares the transcripts dir's
// mark with the fleet's ID in etcd (a fresh process's first etcd request:
// Ctrl-C or SIGTERM while etcd is slow) is interrupted, as one ended
// while it lists the fleet or between keys is: the CLI exits 130 on it,
// printing the summary marked so, not 1 with "fleet id: context canceled"
// for a fault. reap and check tell the same end of the claim so.
func TestAMigrationEndedWhileItClaimsTheDirIsInterrupted(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	dir := t.TempDir()
	reopen := func() *fleet.Backend {
		t.Helper()
		o, err := fleet.Open(fleet.Config{Config: apiConfig(c, "/sessdb/claimcancel"), TranscriptsDir: dir})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { o.Close() })
		return o
	}
	// The dir is marked and the fleet has its ID: a new Backend on the
	// same fleet asks etcd for the ID at its first migration.
	apiPromote(t, store.NewOn(reopen(), store.Options{}), store.Key("github", "acme/widget", "1"), apiLine("one"))
	legacyRoot := t.TempDir()
	if err := os.Mkdir(filepath.Join(legacyRoot, store.Key("github", "acme/widget", "2")), 0o700); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	for _, run := range []struct {
		name string
		run  func(*fleet.Backend) (fleet.MigrateSummary, error)
	}{
		{"to etcd", func(o *fleet.Backend) (fleet.MigrateSummary, error) {
			return fleet.ToEtcd(ctx, legacyRoot, o, fleet.MigrateOptions{}, nil)
		}},
		{"to etcd, a dry run", func(o *fleet.Backend) (fleet.MigrateSummary, error) {
			return fleet.ToEtcd(ctx, legacyRoot, o, fleet.MigrateOptions{DryRun: true}, nil)
		}},
		{"from etcd", func(o *fleet.Backend) (fleet.MigrateSummary, error) {
			return fleet.FromEtcd(ctx, o, filepath.Join(t.TempDir(), "sessions"), fleet.MigrateOptions{}, nil)
		}},
	} {
		sum, err := run.run(reopen())
		if !errors.Is(err, context.Canceled) || !sum.Interrupted || sum.Entries != 0 {
			t.Errorf("%s, ended at its claim: %+v, %v; want ctx's error, interrupted before any key", run.name, sum, err)
		}
	}
}
