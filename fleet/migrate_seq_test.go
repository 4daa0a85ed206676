package fleet

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"sessdb/gates"
	"sessdb/internal/etcdtest"
	"sessdb/internal/faults"
	"sessdb/migrate"
	"sessdb/store"
)

// A fleet worker that resolved a key before --to etcd created it holds a
// cold start's ticket, based on nothing. Promoted after the create, it is
// superseded by the conversation moved in, never written over it; promoted
// before the create (between the migration's file and its record), the
// migration finds the key taken: a conflict, its own file removed, the
// worker's generation as it was.
func TestFleetWorkerAroundAMigrationsCreate(t *testing.T) {
	f := newFixture(t, etcdtest.Start1(t))
	f.now = migNow // the host's clock: on the wall clock its keys expire 14 days after migNow
	after, before := store.Key("github", "seq", "cold-after-create"), store.Key("github", "seq", "cold-before-create")
	root := t.TempDir()
	h := newHostBuilder(t, root)
	for _, k := range []string{after, before} {
		h.mustPromote(k, migJob, "h1", store.PromoteRequest{})
		h.mustPromote(k, migJob, "h2", store.PromoteRequest{})
	}
	late, _ := f.job(after, "fleet cold") // resolved before the create
	if late.Resume {
		t.Fatalf("the fleet resumed a key it does not hold: %+v", late)
	}
	early, _ := f.job(before, "fleet cold")
	faults.Set(func(p faults.Point) error {
		if p == faults.ToEtcdWritten && len(f.files(before)) == 1 && f.recordFile(before) == "" {
			// The migration's file is written and its record not yet:
			// the worker promotes now.
			if res, err := f.promote(early); err != nil || !res.Promoted || res.Gen != 1 {
				t.Errorf("the worker's promotion before the create: %+v, %v", res, err)
			}
		}
		return nil
	})
	t.Cleanup(func() { faults.Set(nil) })
	reports, sum := runMigration(t, true, root, f.b, MigrateOptions{Workers: 1})
	faults.Set(nil)

	if r := reports[after]; r.Action != migrate.Migrated {
		t.Fatalf("the key no worker promoted: %s (%s), want migrated", r.Action, r.Cause)
	}
	res, err := f.promote(late)
	if err != nil || res.Promoted || res.Reason != gates.Superseded || res.SupersededBy != 2 {
		t.Errorf("a cold ticket from before the create, promoted after it: %+v, %v; want superseded by gen 2", res, err)
	}
	f.holds(after, "h2", 2)

	if r := reports[before]; r.Action != Conflict {
		t.Errorf("a key the fleet promoted between the migration's file and its record: %s (%s), want a conflict", r.Action, r.Cause)
	}
	if sum.Complete() {
		t.Errorf("a run with a conflict is complete: %+v", sum)
	}
	f.holds(before, "fleet cold", 1)
	if files, rec := f.files(before), f.recordFile(before); !slices.Equal(files, []string{rec}) {
		t.Errorf("the key's files are %v, want only the worker's %s (the migration's removed)", files, rec)
	}
}

// An answer lost at each of --to etcd's requests in turn (each key's read,
// then its create, the create landed and unanswered): the read is asked
// again, and the create's retry finds the record it made. Every key is
// migrated, its record names a file that is there, every verdict is the
// root's, no file is left over, and a second run finds all of it already.
func TestMigrateToEtcdWithAnAnswerLostAtEachRequest(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start(t, etcdtest.Options{Members: 1, InProcess: true})
	const txn = "/etcdserverpb.KV/Txn" // a key's read and its create are each one
	root := t.TempDir()
	h := newHostBuilder(t, root)
	keys := []string{store.Key("github", "lost", "a"), store.Key("github", "lost", "b"), store.Key("github", "lost", "gone")}
	slices.Sort(keys)
	for _, k := range keys {
		h.mustPromote(k, migJob, "h1", store.PromoteRequest{})
	}
	// A record without a transcript: its create names no file.
	gone := store.Key("github", "lost", "gone")
	if err := os.Remove(h.path(gone, store.TranscriptName)); err != nil {
		t.Fatal(err)
	}
	want := verdicts(t, onRoot(t, root), keys, migProfiles())
	t.Cleanup(func() { c.LoseNext(txn, 0, 0) })
	for skip := range 2 * len(keys) {
		t.Run(fmt.Sprintf("request %d", skip+1), func(t *testing.T) {
			f := newFixture(t, c)
			c.LoseNext(txn, skip, 1)
			reports, sum := runMigration(t, true, root, f.b, MigrateOptions{Workers: 1})
			c.LoseNext(txn, 0, 0)
			for _, k := range keys {
				if r := reports[k]; r.Action != migrate.Migrated {
					t.Errorf("%s: %s (%s), want migrated", k, r.Action, r.Cause)
				}
				files, rec := f.files(k), f.recordFile(k)
				if k == gone && (rec != "" || len(files) != 0) || k != gone && !slices.Equal(files, []string{rec}) {
					t.Errorf("%s: its record names %q, its files are %v", k, rec, files)
				}
			}
			if !sum.Complete() {
				t.Errorf("%+v", sum)
			}
			compare(t, "on the fleet", want, verdicts(t, onFleet(f.b), keys, migProfiles()), nil, nil)
			if _, again := runMigration(t, true, root, f.b, MigrateOptions{Workers: 1}); again.Already != len(keys) {
				t.Errorf("a second run: %+v", again)
			}
		})
	}
}

// An answer lost at each of --from etcd's reads in turn (the listing's
// page, then each key's read): the root gets every key whole, the verdicts
// are the fleet's, and a second run finds all of it already.
func TestMigrateFromEtcdWithAnAnswerLostAtEachRequest(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start(t, etcdtest.Options{Members: 1, InProcess: true})
	f := newFixture(t, c)
	keys := []string{store.Key("github", "lost-back", "a"), store.Key("github", "lost-back", "b")}
	slices.Sort(keys)
	for _, k := range keys {
		f.run(k, "fleet 1")
		f.run(k, "fleet 2")
	}
	want := verdicts(t, onFleet(f.b), keys, migProfiles())
	// The listing is one Range (a page); each key's read one Txn.
	for method, n := range map[string]int{"/etcdserverpb.KV/Range": 1, "/etcdserverpb.KV/Txn": len(keys)} {
		for skip := range n {
			t.Run(fmt.Sprintf("%s %d", method, skip+1), func(t *testing.T) {
				t.Cleanup(func() { c.LoseNext(method, 0, 0) })
				root := t.TempDir()
				c.LoseNext(method, skip, 1)
				reports, sum := runMigration(t, false, root, f.b, MigrateOptions{Workers: 1})
				c.LoseNext(method, 0, 0)
				for _, k := range keys {
					if r := reports[k]; r.Action != migrate.Migrated {
						t.Errorf("%s: %s (%s), want migrated", k, r.Action, r.Cause)
					}
				}
				if !sum.Complete() {
					t.Errorf("%+v", sum)
				}
				compare(t, "on the root", want, verdicts(t, onRoot(t, root), keys, migProfiles()), nil, nil)
				if _, again := runMigration(t, false, root, f.b, MigrateOptions{Workers: 1}); again.Already != len(keys) {
					t.Errorf("a second run: %+v", again)
				}
			})
		}
	}
}

// --from etcd killed at each of its steps, then a fleet worker promotes
// the key (the fleet's workers were not all stopped), then the run again:
// the root serves, between the kill and the re-run, the generation the
// killed run was writing or a cold start, never anything else; the re-run
// settles what the kill left and brings the key forward to the fleet's
// newest generation with every history entry once, and a third run finds
// it already.
func TestFromEtcdKilledThenTheFleetPromotes(t *testing.T) {
	c := etcdtest.Start1(t)
	for _, p := range []faults.Point{faults.FromEtcdLocked, faults.FromEtcdTemp, faults.FromEtcdCommitted, faults.FromEtcdRenamed, faults.FromEtcdSynced} {
		t.Run(string(p), func(t *testing.T) {
			f := newFixture(t, c)
			f.now = migNow
			key := store.Key("github", "seq", "killed-back")
			f.run(key, "fleet 1")
			f.run(key, "fleet 2")
			was := verdicts(t, onFleet(f.b), []string{key}, migProfiles())
			root := filepath.Join(t.TempDir(), "root")
			if last, killed := migChild(t, f, "from-etcd", root, nil, envKillAt+"="+string(p)); !killed {
				t.Fatalf("the child was not killed at %s: %s", p, last)
			}
			for cell, v := range verdicts(t, onRoot(t, root), []string{key}, migProfiles()) {
				if v != was[cell] && !strings.HasPrefix(v, "false ") {
					t.Errorf("between the kill and the re-run: %s: %s, want %s or a cold start", cell, v, was[cell])
				}
			}
			f.run(key, "fleet 3")
			want := verdicts(t, onFleet(f.b), []string{key}, migProfiles())
			reports, sum := runMigration(t, false, root, f.b, migOpts())
			if r := reports[key]; r.Action != migrate.Migrated || !sum.Complete() {
				t.Fatalf("the re-run: %s (%s), %+v", r.Action, r.Cause, sum)
			}
			compare(t, "after the re-run", want, verdicts(t, onRoot(t, root), []string{key}, migProfiles()), nil, nil)
			st, err := f.b.meta.Get(t.Context(), key)
			if err != nil {
				t.Fatal(err)
			}
			_, hist := hostState(t, filepath.Join(root, key))
			var gotGens, wantGens []uint64
			for _, e := range hist {
				gotGens = append(gotGens, e.Gen)
			}
			for _, e := range st.History {
				wantGens = append(wantGens, e.Gen)
			}
			if !slices.Equal(gotGens, wantGens) {
				t.Errorf("the root's history has gens %v, the fleet's %v", gotGens, wantGens)
			}
			if again, _ := runMigration(t, false, root, f.b, migOpts()); again[key].Action != migrate.Already {
				t.Errorf("a third run: %s (%s)", again[key].Action, again[key].Cause)
			}
		})
	}
}

// --to etcd killed at each of its steps, then a fleet worker takes the key
// (resolved and promoted on the fleet before the re-run), then the run
// again. Killed before its create, the fleet's own first generation holds
// the key: the re-run calls it a conflict and writes nothing over it (the
// killed run's file, which no record names, is reap's). Killed after, the
// worker resumed the moved conversation and promoted on it: the re-run
// finds it already, promoted since. Either way the worker's promotion is
// what the fleet serves.
func TestToEtcdKilledThenTheFleetPromotes(t *testing.T) {
	c := etcdtest.Start1(t)
	for _, p := range []faults.Point{faults.ToEtcdWritten, faults.ToEtcdCommitted} {
		t.Run(string(p), func(t *testing.T) {
			f := newFixture(t, c)
			root := t.TempDir()
			h := newHostBuilder(t, root)
			key := store.Key("github", "seq", "killed-to")
			h.mustPromote(key, migJob, "h1", store.PromoteRequest{})
			h.mustPromote(key, migJob, "h2", store.PromoteRequest{})
			if last, killed := migChild(t, f, "to-etcd", root, nil, envKillAt+"="+string(p)); !killed {
				t.Fatalf("the child was not killed at %s: %s", p, last)
			}
			res := f.run(key, "fleet")
			fleetFile := f.recordFile(key)
			reports, sum := runMigration(t, true, root, f.b, migOpts())
			r := reports[key]
			switch p {
			case faults.ToEtcdWritten:
				if res.Gen != 1 || r.Action != Conflict || sum.Complete() {
					t.Errorf("killed before its create, a worker's gen %d since: %s (%s), %+v; want a conflict", res.Gen, r.Action, r.Cause, sum)
				}
				f.holds(key, "fleet", 1)
			default:
				if res.Gen != 3 || r.Action != migrate.Already || !sum.Complete() {
					t.Errorf("killed after its create, a worker's gen %d since: %s (%s), %+v; want already", res.Gen, r.Action, r.Cause, sum)
				}
				f.holds(key, "fleet", 3)
			}
			if f.recordFile(key) != fleetFile {
				t.Errorf("the re-run changed the key's record")
			}
		})
	}
}

// Two runs at once, each way, move each key once (the package doc's
// promise): two --to etcd of one root, and two --from etcd into one
// fresh root, each run with its own Backend and four workers. Every key is
// migrated by one run and already to the other, no run fails or finds a
// conflict, the transcripts dir holds one file per key (the one its
// record names) and the root no temp, and every verdict is the source's.
func TestTwoMigrationsAtOnce(t *testing.T) {
	f := newFixture(t, etcdtest.Start1(t))
	root := t.TempDir()
	h := newHostBuilder(t, root)
	var keys []string
	for i := range 12 {
		k := store.Key("github", "at-once", fmt.Sprint(i))
		keys = append(keys, k)
		h.mustPromote(k, migJob, "h1", store.PromoteRequest{})
		if i%3 == 0 {
			h.mustPromote(k, migJob, "h2", store.PromoteRequest{})
		}
		if i%4 == 1 {
			h.crashAfterCommit(k, migJob, "in flight")
		}
	}
	slices.Sort(keys)
	want := verdicts(t, onRoot(t, root), keys, migProfiles())
	twice := func(to bool, dir string) {
		t.Helper()
		var got [2]map[string]MigrateReport
		var sums [2]MigrateSummary
		var wg sync.WaitGroup
		for i := range got {
			b := f.open()
			opts := migOpts()
			opts.Workers = 4
			got[i] = map[string]MigrateReport{}
			wg.Go(func() {
				var mu sync.Mutex
				visit := func(r MigrateReport) error { mu.Lock(); got[i][r.Key] = r; mu.Unlock(); return nil }
				var err error
				if to {
					sums[i], err = ToEtcd(t.Context(), dir, b, opts, visit)
				} else {
					sums[i], err = FromEtcd(t.Context(), b, dir, opts, visit)
				}
				if err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		for _, k := range keys {
			a, b := got[0][k].Action, got[1][k].Action
			if !(a == migrate.Migrated && b == migrate.Already || a == migrate.Already && b == migrate.Migrated) {
				t.Errorf("to %v: %s: %s (%s) and %s (%s), want migrated once and already once", to, k, a, got[0][k].Cause, b, got[1][k].Cause)
			}
		}
		for _, s := range sums {
			if !s.Complete() {
				t.Errorf("to %v: %+v", to, s)
			}
		}
	}
	twice(true, root)
	for _, k := range keys {
		if files, rec := f.files(k), f.recordFile(k); !slices.Equal(files, []string{rec}) {
			t.Errorf("%s: its record names %s, its files are %v", k, rec, files)
		}
	}
	compare(t, "on the fleet", want, verdicts(t, onFleet(f.b), keys, migProfiles()), nil, nil)
	back := filepath.Join(t.TempDir(), "back")
	twice(false, back)
	for _, k := range keys {
		ents, err := os.ReadDir(filepath.Join(back, k))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), storeTempPrefix) {
				t.Errorf("%s: a temp left: %s", k, e.Name())
			}
		}
	}
	compare(t, "on the root", want, verdicts(t, onRoot(t, back), keys, migProfiles()), nil, nil)
}
