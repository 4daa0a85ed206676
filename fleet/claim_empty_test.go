package fleet

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sessdb/fleet/shared"
	"sessdb/gates"
	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// A worker of a fleet that has records and an ID, pointed at an empty
// dir with no mark: the empty directory under a mount point whose export
// did not mount on its host, or a mistyped path that exists. The fleet
// marked its dir when it made its ID, before its first record, so this
// dir is not the one its records name. None of the fleet's writers (a
// promote, a reap, check --repair, migrate --to etcd) marks it or writes
// there (ErrOtherFleet, saying why), and none of its audits or dry runs
// (check, reap --dry-run, migrate --to etcd --dry-run, migrate --from
// etcd, which reads the records' files there) takes it for the fleet's
// dir; the dir holding a key dir (a dir
// from before marks, or whose mark an operator removed) is still marked,
// and so is the empty dir once the fleet's ID is deleted (the remedy for
// a fleet whose dir was lost for good). Before, the promote marked the
// empty dir, wrote its generation there, reported promoted and named
// the file in etcd, where no other host could read it: every other
// worker's resolve of the key cold-started transcript-replaced.
func TestAFleetWithRecordsNeverMarksAnEmptyDirAsItsOwn(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	key := store.Key("github", "empty", "dir")
	f.run(key, "one")

	wrong := t.TempDir()
	open := func(dir string) *fixture {
		g := &fixture{t: t, c: c, prefix: f.prefix, dir: dir}
		g.b = g.open()
		g.s = store.NewOn(g.b, store.Options{Bounds: gates.Bounds{TTL: 14 * 24 * time.Hour}})
		return g
	}
	g := open(wrong)
	ctx := t.Context()
	later := func() time.Time { return time.Now().Add(48 * time.Hour) }
	steps := []struct {
		name string
		run  func() error
	}{
		{"promote", func() error {
			// Resolved here too: the record's file is not in this dir,
			// a cold start (transcript-replaced) based on the record.
			sess, _ := g.job(key, "two")
			if sess.Reason != gates.TranscriptReplaced {
				t.Errorf("the resolve on the empty dir = %s; want transcript-replaced", sess.Reason)
			}
			res, err := g.promote(sess)
			if res.Promoted || res.Reason != gates.PromoteFailed {
				t.Errorf("the promote on the empty dir = %+v; want promote-failed", res)
			}
			return err
		}},
		{"claim", func() error { return g.b.Claim(ctx) }},
		{"reap", func() error { _, err := g.b.Reap(ctx, ReapOptions{TTL: time.Hour, Now: later}); return err }},
		{"check --repair", func() error { _, err := g.b.Check(ctx, CheckOptions{Repair: true, Now: later}, nil); return err }},
		{"migrate --to etcd", func() error { _, err := ToEtcd(ctx, t.TempDir(), g.b, MigrateOptions{}, nil); return err }},
		// The audits and dry runs refuse it too: their plans are the
		// runs' (before, each went on and planned as if it were the
		// fleet's dir, every record's file missing).
		{"check", func() error { _, err := g.b.Check(ctx, CheckOptions{Now: later}, nil); return err }},
		{"reap --dry-run", func() error {
			_, err := g.b.Reap(ctx, ReapOptions{TTL: time.Hour, Now: later, DryRun: true})
			return err
		}},
		{"migrate --to etcd --dry-run", func() error {
			_, err := ToEtcd(ctx, t.TempDir(), g.b, MigrateOptions{DryRun: true}, nil)
			return err
		}},
		{"migrate --from etcd", func() error {
			_, err := FromEtcd(ctx, g.b, filepath.Join(t.TempDir(), "root"), MigrateOptions{}, nil)
			return err
		}},
	}
	for _, s := range steps {
		if err := s.run(); !errors.Is(err, ErrOtherFleet) || !strings.Contains(err.Error(), "no mark") {
			t.Errorf("%s on an empty unmarked dir of a fleet with records: %v; want ErrOtherFleet saying why", s.name, err)
		}
		if names, _ := os.ReadDir(wrong); len(names) != 0 {
			t.Fatalf("after the %s: the empty dir holds %v; want nothing", s.name, names)
		}
	}
	f.holds(key, "one", 1)

	// The fleet's own dir, its mark removed (the remedy docs/fleet.md
	// gives for a mark that names another fleet), holds its key dir: it
	// is marked again, as before.
	if err := os.Remove(filepath.Join(f.dir, shared.MarkName)); err != nil {
		t.Fatal(err)
	}
	if err := open(f.dir).b.Claim(ctx); err != nil {
		t.Errorf("the claim of the fleet's own dir, its mark removed: %v", err)
	}
	// The fleet's ID deleted (its dir lost for good): the empty dir is
	// the first writer's again.
	if _, err := c.Client(t).Delete(ctx, f.b.meta.FleetIDKey()); err != nil {
		t.Fatal(err)
	}
	if err := open(wrong).b.Claim(ctx); err != nil {
		t.Errorf("the claim of the empty dir, the fleet's ID deleted: %v", err)
	}
}
