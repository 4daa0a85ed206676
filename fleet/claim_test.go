package fleet

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"sessdb/fleet/etcdmeta"
	"sessdb/fleet/internal/sharedfs"
	"sessdb/fleet/shared"
	"sessdb/gates"
	"sessdb/internal/durable"
	"sessdb/internal/etcdtest"
	"sessdb/store"
)

// otherFleet is a second fleet on f's transcripts dir: prefix under
// cluster c.
func (f *fixture) otherFleet(c *etcdtest.Cluster, prefix string) *fixture {
	g := &fixture{t: f.t, c: c, prefix: prefix, dir: f.dir}
	g.b = g.open()
	g.s = store.NewOn(g.b, store.Options{Now: g.clock, Bounds: gates.Bounds{TTL: 14 * 24 * time.Hour}})
	return g
}

// Two fleets on one transcripts dir, the second's prefix the first's
// without its leading slash (an operator's slip: another namespace in
// etcd), or the same prefix on another etcd cluster: every operation of
// the second that would write in the dir or judge its files (a promote,
// a reap, its dry run, a check with and without repair, a migration in
// and out) is ErrOtherFleet, and the first fleet's transcript is still
// there and resumes. Before, the second fleet's reap swept the first's
// transcript as an orphan (the sixteenth session's cfgrev, left high).
func TestTwoFleetsOnOneTranscriptsDirNeverSweepEachOther(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	for _, slip := range []string{"prefix without its slash", "same prefix, another cluster"} {
		t.Run(slip, func(t *testing.T) {
			a := newFixture(t, c)
			key := store.Key("github", "two-fleets", slip)
			a.run(key, "a's")
			var b *fixture
			if slip == "same prefix, another cluster" {
				b = a.otherFleet(etcdtest.Start1(t), a.prefix)
			} else {
				b = a.otherFleet(c, strings.TrimPrefix(a.prefix, "/"))
			}
			later := func() time.Time { return time.Now().Add(48 * time.Hour) }
			ctx := t.Context()
			steps := map[string]func() error{
				"reap": func() error {
					_, err := b.b.Reap(ctx, ReapOptions{TTL: time.Hour, Now: later})
					return err
				},
				"reap --dry-run": func() error {
					_, err := b.b.Reap(ctx, ReapOptions{TTL: time.Hour, Now: later, DryRun: true})
					return err
				},
				"check --repair": func() error {
					_, err := b.b.Check(ctx, CheckOptions{Repair: true, Now: later}, nil)
					return err
				},
				"check": func() error {
					_, err := b.b.Check(ctx, CheckOptions{Now: later}, nil)
					return err
				},
				"migrate --to etcd": func() error {
					_, err := ToEtcd(ctx, t.TempDir(), b.b, MigrateOptions{}, nil)
					return err
				},
				"migrate --from etcd": func() error {
					_, err := FromEtcd(ctx, b.b, filepath.Join(t.TempDir(), "root"), MigrateOptions{}, nil)
					return err
				},
				"claim": func() error { return b.b.Claim(ctx) },
				"resolve": func() error {
					// A key with no record under the second prefix: the
					// mark is read, and nothing is written in the job dir.
					jobDir := t.TempDir()
					_, err := b.s.Resolve(store.Key("github", "two-fleets", slip+" r"), testJob, jobDir)
					if _, serr := os.Lstat(filepath.Join(jobDir, store.TicketName)); !errors.Is(serr, os.ErrNotExist) {
						t.Errorf("resolve on another fleet's dir left a ticket: %v", serr)
					}
					return err
				},
				"promote": func() error {
					// A job resolved while the dir had no mark (before
					// the first fleet's first write) is refused at its
					// promote, the mark there by then.
					mark := filepath.Join(b.dir, shared.MarkName)
					if err := os.Rename(mark, mark+".aside"); err != nil {
						t.Fatal(err)
					}
					sess, jobDir := b.job(store.Key("github", "two-fleets", slip+" b"), "b's")
					if err := os.Rename(mark+".aside", mark); err != nil {
						t.Fatal(err)
					}
					res, err := b.promote(sess)
					if res.Promoted || res.Reason != gates.PromoteFailed {
						t.Errorf("promote on another fleet's dir = %+v; want promote-failed", res)
					}
					if m := markers(stagedOf(t, jobDir)); len(m) != 1 || m[0] != "b's" {
						t.Errorf("the job's run after the refused promote: %v, want it left in its job dir", m)
					}
					return err
				},
			}
			for name, step := range steps {
				if err := step(); !errors.Is(err, ErrOtherFleet) {
					t.Errorf("%s by the second fleet: %v; want ErrOtherFleet", name, err)
				}
			}
			a.holds(key, "a's", 1)
			if files := a.files(key); len(files) != 1 || files[0] != a.recordFile(key) {
				t.Errorf("first fleet's key holds %v, want only its record's file %s", files, a.recordFile(key))
			}
			// The first fleet works on, its dir untouched by the second.
			if res, err := a.b.Reap(ctx, ReapOptions{TTL: 14 * 24 * time.Hour}); err != nil || len(res.Removed)+len(res.Swept) != 0 {
				t.Errorf("first fleet's reap = %+v, %v; want nothing removed", res, err)
			}
			if sum, err := a.b.Check(ctx, CheckOptions{}, nil); err != nil || sum.Problems+sum.Notices != 0 {
				t.Errorf("first fleet's check = %+v, %v; want nothing found (its mark is no finding)", sum, err)
			}
			a.run(key, "a's again")
		})
	}
}

// A dir the fleet has not marked yet (a fleet from before marks, a new
// one) is marked by its first writer, and by nothing that only reads: a
// check, a dry run, a migration out of etcd, a resolve, a dump write no
// mark and make no ID in etcd (audits change nothing). The mark names the
// ID etcd holds.
func TestOnlyAWriterMarksTheDir(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	cli := c.Client(t)
	unmarked := func(after string) {
		t.Helper()
		if _, err := os.Lstat(filepath.Join(f.dir, shared.MarkName)); !os.IsNotExist(err) {
			t.Fatalf("after %s: the mark: %v; want none", after, err)
		}
		resp, err := cli.Get(t.Context(), f.b.meta.FleetIDKey())
		if err != nil || len(resp.Kvs) != 0 {
			t.Fatalf("after %s: the fleet's ID in etcd: %v, %v; want none", after, resp.Kvs, err)
		}
	}
	ctx := t.Context()
	if _, err := f.b.Check(ctx, CheckOptions{}, nil); err != nil {
		t.Fatal(err)
	}
	unmarked("a check")
	if _, err := f.b.Reap(ctx, ReapOptions{TTL: time.Hour, DryRun: true}); err != nil {
		t.Fatal(err)
	}
	unmarked("a dry run")
	if _, err := FromEtcd(ctx, f.b, filepath.Join(t.TempDir(), "root"), MigrateOptions{}, nil); err != nil {
		t.Fatal(err)
	}
	unmarked("a migration out of etcd")
	resolveOn(t, f.s, store.Key("github", "mark", "first"))
	unmarked("a resolve")

	f.run(store.Key("github", "mark", "first"), "first")
	m, found, err := shared.ReadMark(f.dir)
	if err != nil || !found {
		t.Fatalf("after a promotion, the mark: %+v, %v, %v; want one", m, found, err)
	}
	id, err := f.b.meta.FleetID(ctx, false)
	if err != nil || id == "" || m.ID != id || m.Prefix != f.prefix {
		t.Fatalf("the mark %+v, the fleet's ID %q (%v); want the mark to name it and prefix %q", m, id, err, f.prefix)
	}
}

// Workers of two fleets that claim one new dir at once: one fleet wins
// it, every worker of that fleet is let in, every worker of the other is
// ErrOtherFleet, and the dir holds one mark and no temp.
func TestFleetsClaimingOneDirAtOnceOneWins(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	a := newFixture(t, c)
	other := "/sessdb/" + randHex(8)
	const each = 6
	type result struct {
		prefix string
		err    error
	}
	results := make(chan result, 2*each)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range 2 * each {
		prefix := a.prefix
		if i%2 == 1 {
			prefix = other
		}
		b := (&fixture{t: t, c: c, prefix: prefix, dir: a.dir}).open()
		wg.Go(func() {
			<-start
			results <- result{prefix, b.Claim(t.Context())}
		})
	}
	close(start)
	wg.Wait()
	close(results)
	m, found, err := shared.ReadMark(a.dir)
	if err != nil || !found {
		t.Fatalf("the mark: %v, %v", found, err)
	}
	for r := range results {
		switch {
		case r.prefix == m.Prefix && r.err != nil:
			t.Errorf("a worker of the winning fleet %s: %v", r.prefix, r.err)
		case r.prefix != m.Prefix && !errors.Is(r.err, ErrOtherFleet):
			t.Errorf("a worker of the losing fleet %s: %v; want ErrOtherFleet", r.prefix, r.err)
		}
	}
	names, err := os.ReadDir(a.dir)
	if err != nil || len(names) != 1 || names[0].Name() != shared.MarkName {
		t.Errorf("the dir holds %v (%v); want the mark alone", names, err)
	}
}

// A mark that is not one sessdb wrote (a link, a FIFO, a directory, bytes
// that do not parse, a file past any mark's size) refuses every writer and audit with ErrOtherFleet,
// is never followed, never blocks, and is left as it is: an operator
// decides whose dir it is.
func TestABadMarkRefusesAndIsLeft(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	outside := filepath.Join(t.TempDir(), "target")
	if err := os.WriteFile(outside, []byte("sessdb fleet mark 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, make := range map[string]func(string) error{
		"link":      func(p string) error { return os.Symlink(outside, p) },
		"fifo":      func(p string) error { return unix.Mkfifo(p, 0o600) },
		"directory": func(p string) error { return os.Mkdir(p, 0o700) },
		"garbage": func(p string) error {
			return os.WriteFile(p, []byte("sessdb fleet mark 1\nid x\nprefix \"/sessdb\"\n"), 0o600)
		},
		"empty": func(p string) error { return os.WriteFile(p, nil, 0o600) },
		"huge": func(p string) error {
			// A terabyte, sparse: refused by its size, never read whole.
			f, err := os.Create(p)
			if err == nil {
				err = f.Truncate(1 << 40)
				f.Close()
			}
			return err
		},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, c)
			p := filepath.Join(f.dir, shared.MarkName)
			if err := make(p); err != nil {
				t.Fatal(err)
			}
			before, _ := os.Lstat(p)
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			if err := f.b.Claim(ctx); !errors.Is(err, ErrOtherFleet) || !errors.Is(err, shared.ErrBadMark) {
				t.Errorf("claim: %v; want ErrOtherFleet and ErrBadMark", err)
			}
			if _, err := f.b.Check(ctx, CheckOptions{}, nil); !errors.Is(err, ErrOtherFleet) {
				t.Errorf("check: %v; want ErrOtherFleet", err)
			}
			after, err := os.Lstat(p)
			if err != nil || after.Mode() != before.Mode() || after.Size() != before.Size() || !after.ModTime().Equal(before.ModTime()) {
				t.Errorf("the mark after: %v, %v; want it left as it was (%v)", after, err, before)
			}
			if b, err := os.ReadFile(outside); err != nil || string(b) != "sessdb fleet mark 1\n" {
				t.Errorf("the link's target: %q, %v; want it untouched", b, err)
			}
		})
	}
}

// A marked dir whose fleet has no ID in etcd (its etcd data lost, or a
// prefix that never made one) is another fleet's: refused, and no ID is
// made that would take the dir over.
func TestAMarkedDirOfAFleetWithoutAnIDIsRefused(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	a := newFixture(t, c)
	a.run(store.Key("github", "mark", "no-id"), "a's")
	if _, err := c.Client(t).Delete(t.Context(), a.b.meta.FleetIDKey()); err != nil {
		t.Fatal(err)
	}
	b := a.otherFleet(c, a.prefix) // a new Backend: it has not found the dir its own yet
	if err := b.b.Claim(t.Context()); !errors.Is(err, ErrOtherFleet) || !strings.Contains(err.Error(), "no ID in etcd") {
		t.Fatalf("claim of a marked dir by a fleet without an ID: %v; want ErrOtherFleet saying so", err)
	}
	if id, err := b.b.meta.FleetID(t.Context(), false); err != nil || id != "" {
		t.Fatalf("the fleet's ID after the refused claim: %q, %v; want none made", id, err)
	}
}

// A value at the fleet's ID key that is not an ID sessdb made is
// ErrDamaged, never taken for an ID to compare or written over.
func TestADamagedFleetIDIsAnError(t *testing.T) {
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	if _, err := c.Client(t).Put(t.Context(), f.b.meta.FleetIDKey(), "not an id"); err != nil {
		t.Fatal(err)
	}
	for _, create := range []bool{false, true} {
		if id, err := f.b.meta.FleetID(t.Context(), create); !errors.Is(err, etcdmeta.ErrDamaged) {
			t.Errorf("FleetID(create %v) = %q, %v; want ErrDamaged", create, id, err)
		}
	}
	if err := f.b.Claim(t.Context()); !errors.Is(err, etcdmeta.ErrDamaged) {
		t.Errorf("claim: %v; want ErrDamaged", err)
	}
	if _, err := os.Lstat(filepath.Join(f.dir, shared.MarkName)); !os.IsNotExist(err) {
		t.Errorf("the mark after a damaged ID: %v; want none written", err)
	}
}

// A temp of the dir's mark that a crash left (the first marking cut
// short) is an orphan once past the grace period, a notice as every
// orphan is, which check --repair removes and says so; a younger one may
// be a marking under way and is no finding. Before, it was a problem
// (check exit 3), and the repair's pass over the key's orphans then took
// its name for a key: "not removed: lock ...: invalid key", though it was
// removed and counted repaired.
func TestAMarkTempACrashLeftIsAnOrphan(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	f.run(store.Key("github", "mark", "temp"), "one")
	old, young := filepath.Join(f.dir, shared.MarkName+".tmp-0123456789abcdef"), filepath.Join(f.dir, shared.MarkName+".tmp-fedcba9876543210")
	for _, p := range []string{old, young} {
		if err := os.WriteFile(p, []byte("sessdb fleet mark 1\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	past := time.Now().Add(-3 * time.Hour)
	if err := os.Chtimes(old, past, past); err != nil {
		t.Fatal(err)
	}
	for _, repair := range []bool{false, true} {
		var found []store.Finding
		sum, err := f.b.Check(t.Context(), CheckOptions{Repair: repair}, func(fd store.Finding) error {
			found = append(found, fd)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		want := map[bool]string{false: "", true: "removed"}[repair]
		if len(found) != 1 || found[0].Path != filepath.Base(old) || found[0].Kind != KindOrphan || found[0].Severity != store.SeverityNotice || found[0].Repaired != repair || found[0].Repair != want {
			t.Errorf("check (repair %v) finds %+v; want the old temp alone, an orphan (a notice, as every orphan), repaired %v, repair %q", repair, found, repair, want)
		}
		if sum.Problems != 0 || sum.Notices != 1 {
			t.Errorf("check (repair %v): %d problems, %d notices; want the temp a notice", repair, sum.Problems, sum.Notices)
		}
	}
	if _, err := os.Lstat(old); !os.IsNotExist(err) {
		t.Errorf("the old temp after check --repair: %v; want it removed", err)
	}
	if _, err := os.Lstat(young); err != nil {
		t.Errorf("the young temp after check --repair: %v; want it left", err)
	}
}

// unlinkFirst is the disk with fn run before the first Unlink of name
// (and not again for an Unlink fn makes): another actor's removal, between
// a run's listing and its own.
type unlinkFirst struct {
	durable.FS
	name string
	ran  *atomic.Bool
	fn   func()
}

func (d unlinkFirst) Unlink(dir *os.File, name string) error {
	if name == d.name && d.ran.CompareAndSwap(false, true) {
		d.fn()
	}
	return d.FS.Unlink(dir, name)
}

// Two check --repair runs (two hosts' timers) that both found a temp of
// the dir's mark a crash left: the one whose removal comes second meets
// it gone, and reports it cleanly, as for any orphan another run removed
// first: an orphan, not repaired by it, nothing remaining, and no error;
// the other run removed it. Forced here: the second run, whole, between
// the first's listing of the dir and its removal of the temp.
func TestAMarkTempTwoRepairsFoundIsRemovedOnce(t *testing.T) {
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	f.run(store.Key("github", "mark", "temp-raced"), "one")
	name := f.oldMarkTemp()
	temp := filepath.Join(f.dir, name)
	repair := func(b *Backend) (found []store.Finding, err error) {
		_, err = b.Check(t.Context(), CheckOptions{Repair: true}, func(fd store.Finding) error {
			found = append(found, fd)
			return nil
		})
		return found, err
	}
	g := f.otherFleet(c, f.prefix) // another host's check --repair
	var second []store.Finding
	var secondErr error
	defer sharedfs.Use(unlinkFirst{FS: durable.Disk{}, name: name, ran: new(atomic.Bool), fn: func() {
		second, secondErr = repair(g.b)
	}})()
	first, err := repair(f.b)
	if secondErr != nil || len(second) != 1 || second[0].Path != name || second[0].Kind != KindOrphan || !second[0].Repaired || second[0].Repair != "removed" {
		t.Errorf("the run that removed it first: %+v, %v; want the temp an orphan, removed", second, secondErr)
	}
	if err != nil || len(first) != 1 || first[0].Path != name || first[0].Kind != KindOrphan || first[0].Repaired || first[0].Remains || !strings.HasPrefix(first[0].Repair, "gone since it was found") {
		t.Errorf("the run that came second: %+v, %v; want the temp an orphan gone since it was found, not repaired by it, no error", first, err)
	}
	if _, err := os.Lstat(temp); !os.IsNotExist(err) {
		t.Errorf("the temp after both: %v; want it removed", err)
	}
}

// reap removes the temp of the dir's mark that a crash left, past the
// grace period, as it removes a key's temp and as a sessions root's reap
// removes its stray temps (a dry run names it and keeps it); a younger
// one may be a marking under way and is left. Before, only check
// --repair removed it: a fleet reaped from a timer kept it for good.
func TestReapRemovesAMarkTempACrashLeft(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	f.run(store.Key("github", "mark", "reap"), "one")
	old, young := shared.MarkName+".tmp-0123456789abcdef", shared.MarkName+".tmp-fedcba9876543210"
	for _, n := range []string{old, young} {
		if err := os.WriteFile(filepath.Join(f.dir, n), []byte("sessdb fleet mark 1\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	past := time.Now().Add(-3 * time.Hour)
	if err := os.Chtimes(filepath.Join(f.dir, old), past, past); err != nil {
		t.Fatal(err)
	}
	for _, dry := range []bool{true, false} {
		res, err := f.b.Reap(t.Context(), ReapOptions{DryRun: dry})
		if err != nil || !slices.Equal(res.Swept, []string{old}) || len(res.Skipped) != 0 {
			t.Fatalf("reap (dry run %v) = %+v, %v; want the old mark temp swept, alone", dry, res, err)
		}
		_, err = os.Lstat(filepath.Join(f.dir, old))
		if gone := os.IsNotExist(err); gone == dry {
			t.Fatalf("the old mark temp after reap (dry run %v): %v", dry, err)
		}
	}
	if _, err := os.Lstat(filepath.Join(f.dir, young)); err != nil {
		t.Errorf("the young mark temp after reap: %v; want it left", err)
	}
	if _, err := os.Lstat(filepath.Join(f.dir, shared.MarkName)); err != nil {
		t.Errorf("the mark after reap: %v; want it kept", err)
	}
}

// oldMarkTemp writes a temp of the dir's mark, as a crash in its first
// marking leaves one, three hours old (past the default grace), and
// returns its name in the dir.
func (f *fixture) oldMarkTemp() string {
	f.t.Helper()
	name := shared.MarkName + ".tmp-0123456789abcdef"
	p := filepath.Join(f.dir, name)
	if err := os.WriteFile(p, []byte("sessdb fleet mark 1\n"), 0o600); err != nil {
		f.t.Fatal(err)
	}
	old := time.Now().Add(-3 * time.Hour)
	if err := os.Chtimes(p, old, old); err != nil {
		f.t.Fatal(err)
	}
	return name
}
