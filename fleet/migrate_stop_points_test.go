package fleet

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"sessdb/internal/etcdtest"
	"sessdb/internal/faults"
	"sessdb/migrate"
	"sessdb/store"
)

// A migration stopped at each of the steps that take its ctx besides the
// etcd requests (TestAMigrationStoppedWhileEtcdIsSilentEndsAtTheStop): the
// copy of a first move, the copy of a missing generation file written
// again, a dry run's read of a promotion's temp (both directions), and the
// read after a roll-forward. The stop comes at a hook or fault point just
// before the step, so it is cut every time. Each run ends interrupted; a
// key the stop cut before anything was done is not printed and left as it
// was, and a re-run finishes it (the missing file written again by the
// re-run's already); a key whose promotion in flight was rolled forward
// first is printed failed, saying so.
func TestAMigrationStoppedAtEachStepEndsThere(t *testing.T) {
	c := etcdtest.Start1(t)
	for _, tc := range []struct {
		name    string
		to, dry bool
		// setup makes the key's state and says where the stop comes:
		// a b.hook point, or "" for the meta.db open's fault point.
		setup func(t *testing.T, f *fixture, h *hostBuilder, key string) string
		// printed: the report the run delivers ("" none), its cause
		// containing cause.
		printed    migrate.Action
		cause      string
		notCause   string // what the printed cause must not say ("" nothing)
		after      func(t *testing.T, f *fixture, h *hostBuilder, key string, was string)
		again      migrate.Action
		againWrite bool // the re-run's report names the record's file in written
	}{
		{
			name: "to etcd, the first copy", to: true,
			setup: func(t *testing.T, f *fixture, h *hostBuilder, key string) string {
				h.mustPromote(key, migJob, "m1", store.PromoteRequest{})
				return hookMigrateCopy
			},
			after: func(t *testing.T, f *fixture, h *hostBuilder, key, _ string) {
				if files := f.files(key); len(files) != 0 {
					t.Errorf("the key's files after the stopped copy: %v; want none", files)
				}
				if got := f.recordFileOrErr(key); got != "" {
					t.Errorf("etcd's record after the stopped copy names %s; want no record", got)
				}
			},
			again: migrate.Migrated, againWrite: true,
		},
		{
			name: "to etcd, a missing file written again", to: true,
			setup: func(t *testing.T, f *fixture, h *hostBuilder, key string) string {
				h.mustPromote(key, migJob, "m1", store.PromoteRequest{})
				got, _ := runMigration(t, true, h.root, f.b, migOpts())
				if r := got[key]; r.Action != migrate.Migrated {
					t.Fatalf("the first move: %s (%s)", r.Action, r.Cause)
				}
				if err := os.Remove(filepath.Join(f.dir, got[key].Written[0])); err != nil {
					t.Fatal(err)
				}
				return hookMigrateCopy
			},
			after: func(t *testing.T, f *fixture, h *hostBuilder, key, _ string) {
				if files := f.files(key); len(files) != 0 {
					t.Errorf("the key's files after the stopped write: %v; want none (the record's still missing)", files)
				}
			},
			again: migrate.Already, againWrite: true,
		},
		{
			name: "to etcd, the read after a roll-forward", to: true,
			setup: func(t *testing.T, f *fixture, h *hostBuilder, key string) string {
				h.mustPromote(key, migJob, "m1", store.PromoteRequest{})
				h.crashAfterCommit(key, migJob, "m2")
				return hookMigrateRead
			},
			printed: migrate.Failed, cause: "rolled forward only",
			after: func(t *testing.T, f *fixture, h *hostBuilder, key, temp string) {
				if _, err := os.Lstat(temp); !os.IsNotExist(err) {
					t.Errorf("the promotion's temp after the stop: %v; want it rolled forward", err)
				}
				if got := f.recordFileOrErr(key); got != "" {
					t.Errorf("etcd's record after the stop names %s; want no record", got)
				}
			},
			again: migrate.Migrated, againWrite: true,
		},
		{
			// A --from etcd killed after its commit left the promotion
			// in flight of the generation etcd holds, whose file then went
			// missing: the run rolls it forward, finds the key already,
			// and is stopped as it writes the file again.
			name: "to etcd, a missing file written again after a roll-forward", to: true,
			setup: func(t *testing.T, f *fixture, h *hostBuilder, key string) string {
				h.mustPromote(key, migJob, "m1", store.PromoteRequest{})
				got, _ := runMigration(t, true, h.root, f.b, migOpts())
				if r := got[key]; r.Action != migrate.Migrated {
					t.Fatalf("the first move: %s (%s)", r.Action, r.Cause)
				}
				if err := os.RemoveAll(h.path(key)); err != nil {
					t.Fatal(err)
				}
				faults.Set(func(p faults.Point) error {
					if p == faults.FromEtcdCommitted {
						return errors.New("killed after the commit")
					}
					return nil
				})
				back, _ := runMigration(t, false, h.root, f.b, migOpts())
				faults.Set(nil)
				if r := back[key]; r.Action != migrate.Failed {
					t.Fatalf("the move back killed after its commit: %s (%s)", r.Action, r.Cause)
				}
				if err := os.Remove(filepath.Join(f.dir, got[key].Written[0])); err != nil {
					t.Fatal(err)
				}
				return hookMigrateCopy
			},
			printed: migrate.Failed, cause: "rolled forward only",
			after: func(t *testing.T, f *fixture, h *hostBuilder, key, temp string) {
				if _, err := os.Lstat(temp); !os.IsNotExist(err) {
					t.Errorf("the promotion's temp after the stop: %v; want it rolled forward", err)
				}
				if files := f.files(key); len(files) != 0 {
					t.Errorf("the key's files after the stopped write: %v; want none (the record's still missing)", files)
				}
			},
			again: migrate.Already, againWrite: true,
		},
		{
			// The run's own roll-forward read the temp whole with
			// context.Background(): stopped as it began, it renamed the
			// temp and the key was printed failed, rolled forward only.
			name: "to etcd, the roll-forward's read of a promotion's temp", to: true,
			setup: func(t *testing.T, f *fixture, h *hostBuilder, key string) string {
				h.mustPromote(key, migJob, "m1", store.PromoteRequest{})
				h.crashAfterCommit(key, migJob, "m2")
				return "fault:" + string(faults.RollForwardTempRead)
			},
			after: func(t *testing.T, f *fixture, h *hostBuilder, key, temp string) {
				if _, err := os.Lstat(temp); err != nil {
					t.Errorf("the promotion's temp after the stopped roll-forward: %v; want it in place", err)
				}
			},
			again: migrate.Migrated, againWrite: true,
		},
		{
			name: "from etcd, the roll-forward's read of a promotion's temp",
			setup: func(t *testing.T, f *fixture, h *hostBuilder, key string) string {
				h.mustPromote(key, migJob, "m1", store.PromoteRequest{})
				if got, _ := runMigration(t, true, h.root, f.b, migOpts()); got[key].Action != migrate.Migrated {
					t.Fatalf("the first move: %+v", got[key])
				}
				h.crashAfterCommit(key, migJob, "m2")
				return "fault:" + string(faults.RollForwardTempRead)
			},
			after: func(t *testing.T, f *fixture, h *hostBuilder, key, temp string) {
				if _, err := os.Lstat(temp); err != nil {
					t.Errorf("the promotion's temp after the stopped roll-forward: %v; want it in place", err)
				}
			},
			again: Conflict,
		},
		{
			// The copy of the generation into the key dir's temp ignored
			// the stop: it wrote the temp whole, committed, and printed
			// the key migrated.
			name: "from etcd, the copy into a temp",
			setup: func(t *testing.T, f *fixture, h *hostBuilder, key string) string {
				h.mustPromote(key, migJob, "m1", store.PromoteRequest{})
				if got, _ := runMigration(t, true, h.root, f.b, migOpts()); got[key].Action != migrate.Migrated {
					t.Fatalf("the first move: %+v", got[key])
				}
				if err := os.RemoveAll(h.path(key)); err != nil {
					t.Fatal(err)
				}
				return hookMigrateCopy
			},
			after: func(t *testing.T, f *fixture, h *hostBuilder, key, _ string) {
				if _, err := os.Lstat(h.path(key)); !os.IsNotExist(err) {
					t.Errorf("the key dir after the stopped copy: %v; want none (the run made it, and takes it away)", err)
				}
			},
			again: migrate.Migrated,
		},
		{
			// A --from etcd killed after its commit left the generation
			// etcd held in flight in the key dir; the fleet promoted
			// since. The run rolls it forward, and is stopped as it
			// copies the newer generation: printed failed, saying so.
			name: "from etcd, the copy after a roll-forward",
			setup: func(t *testing.T, f *fixture, h *hostBuilder, key string) string {
				h.mustPromote(key, migJob, "m1", store.PromoteRequest{})
				if got, _ := runMigration(t, true, h.root, f.b, migOpts()); got[key].Action != migrate.Migrated {
					t.Fatalf("the first move: %+v", got[key])
				}
				if err := os.RemoveAll(h.path(key)); err != nil {
					t.Fatal(err)
				}
				faults.Set(func(p faults.Point) error {
					if p == faults.FromEtcdCommitted {
						return errors.New("killed after the commit")
					}
					return nil
				})
				back, _ := runMigration(t, false, h.root, f.b, migOpts())
				faults.Set(nil)
				if r := back[key]; r.Action != migrate.Failed {
					t.Fatalf("the move back killed after its commit: %s (%s)", r.Action, r.Cause)
				}
				if res := f.run(key, "m2"); !res.Promoted {
					t.Fatalf("the fleet's promotion: %+v", res)
				}
				return hookMigrateCopy
			},
			printed: migrate.Failed, cause: "nothing written, rolled forward only",
			after: func(t *testing.T, f *fixture, h *hostBuilder, key, temp string) {
				if _, err := os.Lstat(temp); !os.IsNotExist(err) {
					t.Errorf("the promotion's temp after the stop: %v; want it rolled forward", err)
				}
				if temps, _ := filepath.Glob(h.path(key, storeTempPrefix+"*")); len(temps) != 0 {
					t.Errorf("temps after the stopped copy: %v; want none", temps)
				}
			},
			again: migrate.Migrated,
		},
		{
			// A key dir the fleet promoted past since it moved, a killed
			// run's promotion temp left in it: the run sweeps the temp
			// under the lock, and is stopped as it copies the newer
			// generation. Something was done (the temp removed): printed
			// failed, nothing written, and no roll-forward said. Taken
			// for a key where nothing was done (mutnew50's N17, the
			// sweep not counted), it was not printed at all; N40 said
			// "rolled forward only" of it.
			name: "from etcd, the copy after a sweep of a stray temp",
			setup: func(t *testing.T, f *fixture, h *hostBuilder, key string) string {
				h.mustPromote(key, migJob, "m1", store.PromoteRequest{})
				if got, _ := runMigration(t, true, h.root, f.b, migOpts()); got[key].Action != migrate.Migrated {
					t.Fatalf("the first move: %+v", got[key])
				}
				if res := f.run(key, "m2"); !res.Promoted {
					t.Fatalf("the fleet's promotion: %+v", res)
				}
				if err := os.WriteFile(h.path(key, storeTempPrefix+"0123456789abcdef"), []byte("a killed run's"), 0o600); err != nil {
					t.Fatal(err)
				}
				return hookMigrateCopy
			},
			printed: migrate.Failed, cause: "nothing written", notCause: "rolled forward",
			after: func(t *testing.T, f *fixture, h *hostBuilder, key, _ string) {
				if temps, _ := filepath.Glob(h.path(key, storeTempPrefix+"*")); len(temps) != 0 {
					t.Errorf("temps after the stopped copy: %v; want the stray one swept, none written", temps)
				}
			},
			again: migrate.Migrated,
		},
		{
			name: "to etcd, a dry run's read of a promotion's temp", to: true, dry: true,
			setup: func(t *testing.T, f *fixture, h *hostBuilder, key string) string {
				h.mustPromote(key, migJob, "m1", store.PromoteRequest{})
				h.crashAfterCommit(key, migJob, "m2")
				return ""
			},
			after: func(t *testing.T, f *fixture, h *hostBuilder, key, temp string) {
				if _, err := os.Lstat(temp); err != nil {
					t.Errorf("the promotion's temp after the stopped dry run: %v; want it in place", err)
				}
			},
			again: migrate.Migrated,
		},
		{
			name: "from etcd, a dry run's read of a promotion's temp", dry: true,
			setup: func(t *testing.T, f *fixture, h *hostBuilder, key string) string {
				h.mustPromote(key, migJob, "m1", store.PromoteRequest{})
				if got, _ := runMigration(t, true, h.root, f.b, migOpts()); got[key].Action != migrate.Migrated {
					t.Fatalf("the first move: %+v", got[key])
				}
				h.crashAfterCommit(key, migJob, "m2")
				return ""
			},
			after: func(t *testing.T, f *fixture, h *hostBuilder, key, temp string) {
				if _, err := os.Lstat(temp); err != nil {
					t.Errorf("the promotion's temp after the stopped dry run: %v; want it in place", err)
				}
			},
			again: Conflict,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, c)
			h := newHostBuilder(t, t.TempDir())
			key := store.Key("github", "migrate-stop-points", tc.name)
			point := tc.setup(t, f, h, key)
			temps, _ := filepath.Glob(h.path(key, storeTempPrefix+"*"))
			temp := ""
			if len(temps) == 1 {
				temp = temps[0]
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			stops := 0
			if fp, ok := strings.CutPrefix(point, "fault:"); ok {
				faults.Set(func(p faults.Point) error {
					if p == faults.Point(fp) {
						stops++
						cancel()
					}
					return nil
				})
				t.Cleanup(func() { faults.Set(nil) })
			} else if point != "" {
				f.b.hook = func(p, k string) error {
					if p == point && k == key {
						stops++
						cancel()
					}
					return nil
				}
			} else {
				faults.Set(func(p faults.Point) error {
					if p == faults.DBOpenBeforeMeta {
						stops++
						cancel()
					}
					return nil
				})
				t.Cleanup(func() { faults.Set(nil) })
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
			f.b.hook = nil
			faults.Set(nil)
			if stops == 0 || !errors.Is(err, context.Canceled) || !sum.Interrupted {
				t.Fatalf("stopped at the step (%d stops): %+v, %v; want context.Canceled, interrupted", stops, sum, err)
			}
			switch {
			case tc.printed == "" && len(got) != 0:
				t.Errorf("the key the stop cut before anything was done was printed: %+v; want it left as a key never started", got)
			case tc.printed != "" && (len(got) != 1 || got[0].Action != tc.printed || !strings.Contains(got[0].Cause, tc.cause) || len(got[0].Written) != 0):
				t.Errorf("the key the stop cut: %+v; want it printed %s, saying %q, nothing written", got, tc.printed, tc.cause)
			case tc.notCause != "" && len(got) == 1 && strings.Contains(got[0].Cause, tc.notCause):
				t.Errorf("the key the stop cut says %q; want no %q in it", got[0].Cause, tc.notCause)
			}
			tc.after(t, f, h, key, temp)
			again, _ := runMigration(t, tc.to, h.root, f.b, opts)
			r := again[key]
			if r.Action != tc.again {
				t.Fatalf("the re-run: %s %v (%s); want %s", r.Action, r.Written, r.Cause, tc.again)
			}
			if tc.againWrite {
				file := f.recordFileOrErr(key)
				if file == "" || !slices.Contains(r.Written, file) {
					t.Errorf("the re-run wrote %v; want the record's file %q among them", r.Written, file)
				}
				if files := f.files(key); !slices.Equal(files, []string{file}) {
					t.Errorf("the key's files after the re-run: %v; want the record's %s alone", files, file)
				}
			}
		})
	}
}

// deadlineCtx is a caller's ctx whose deadline the test makes pass when
// it chooses: its Err is then context.DeadlineExceeded.
type deadlineCtx struct {
	context.Context
	once sync.Once
	done chan struct{}
}

func newDeadlineCtx() *deadlineCtx {
	return &deadlineCtx{Context: context.Background(), done: make(chan struct{})}
}

func (c *deadlineCtx) pass()                 { c.once.Do(func() { close(c.done) }) }
func (c *deadlineCtx) Done() <-chan struct{} { return c.done }
func (c *deadlineCtx) Err() error {
	select {
	case <-c.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}

// A create that the caller's deadline cut short (etcd's client gives
// ErrUnavailable with the deadline) fails its key, but says nothing of
// etcd: a key under way that gets to its read after it (here one whose
// promotion in flight was rolled forward, held there until the first key
// is printed) is cut by the deadline too, printed failed as rolled
// forward only. Taken for etcd's unavailability (failEtcd without its
// stopped test), the cut create made that key "not tried: an earlier key
// found etcd unavailable".
func TestACreateTheCallersDeadlineCutIsNotEtcdUnavailable(t *testing.T) {
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	h := newHostBuilder(t, t.TempDir())
	first, second := "", store.Key("github", "create-cut", "rolled")
	for i := 0; first == "" || first >= second; i++ {
		first = store.Key("github", "create-cut", string(rune('a'+i)))
	}
	h.mustPromote(first, migJob, "m1", store.PromoteRequest{})
	h.mustPromote(second, migJob, "m1", store.PromoteRequest{})
	h.crashAfterCommit(second, migJob, "m2")

	p := etcdtest.NewProxy(t, c.Endpoint(0))
	b := f.open(func(cfg *Config) {
		cfg.Endpoints = []string{p.URL()}
		cfg.RequestTimeout = 10 * time.Second
	})
	ctx := newDeadlineCtx()
	defer ctx.pass()
	b.hook = func(point, k string) error {
		if point != hookMigrateCopy || k != first {
			return nil
		}
		p.BlackholeAnswers()
		go func() { // the deadline once the create has landed
			for f.recordFileOrErr(first) == "" {
				time.Sleep(10 * time.Millisecond)
			}
			ctx.pass()
		}()
		return nil
	}
	firstPrinted := make(chan struct{})
	faults.Set(func(pt faults.Point) error {
		if pt == faults.ToEtcdRolledForward {
			select {
			case <-firstPrinted:
			case <-time.After(20 * time.Second):
				return errors.New("the first key was never printed")
			}
		}
		return nil
	})
	t.Cleanup(func() { faults.Set(nil) })
	got := map[string]MigrateReport{}
	opts := migOpts()
	opts.Workers = 2
	sum, err := ToEtcd(ctx, h.root, b, opts, func(r MigrateReport) error {
		got[r.Key] = r
		if r.Key == first {
			close(firstPrinted)
		}
		return nil
	})
	faults.Set(nil)
	if !errors.Is(err, context.DeadlineExceeded) || !sum.Interrupted {
		t.Fatalf("a create the caller's deadline cut: %+v, %v; want context.DeadlineExceeded, interrupted", sum, err)
	}
	t.Logf("the first key: %s (%s)", got[first].Action, got[first].Cause)
	if r := got[first]; r.Action != migrate.Failed {
		t.Errorf("the key whose create the deadline cut: %s (%s); want failed", r.Action, r.Cause)
	}
	if r := got[second]; r.Action != migrate.Failed || !strings.Contains(r.Cause, "rolled forward only") || strings.Contains(r.Cause, "not tried") {
		t.Errorf("the key read after the cut create: %s (%s); want failed, rolled forward only, by the deadline", r.Action, r.Cause)
	}
}
