package fleet

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"sessdb/internal/etcdtest"
	"sessdb/migrate"
	"sessdb/store"
)

// A committed promotion's temp that is not a regular file (here a
// directory put at its name) is one no roll-forward renames or removes:
// the record stays pending, and neither --to etcd nor --from etcd can
// settle the key. Each fails it saying so and what to do, its dry run
// too, and changes nothing. Before: the runs said "a pending promotion was
// not settled"; --to etcd's dry run blamed current.jsonl ("is not a
// regular file"), and --from etcd's called the key a conflict.
func TestMigrateAPendingTempThatIsNotARegularFileFailsSayingSo(t *testing.T) {
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	root := t.TempDir()
	h := newHostBuilder(t, root)
	key := store.Key("github", "odd-temp", "a")
	h.mustPromote(key, migJob, "a1", store.PromoteRequest{})
	if got, _ := runMigration(t, true, root, f.b, migOpts()); got[key].Action != migrate.Migrated {
		t.Fatalf("the key's first move into etcd: %+v", got[key])
	}
	h.crashAfterCommit(key, migJob, "a2")
	tmp := h.pendingTemp(key)
	if err := os.Remove(tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	entries := func() string {
		names, err := os.ReadDir(h.path(key))
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range names {
			out = append(out, e.Name())
		}
		return strings.Join(out, " ")
	}
	before, inEtcd := entries(), len(etcdOf(t, c, f.prefix))
	for _, to := range []bool{true, false} {
		for _, dry := range []bool{true, false} {
			opts := migOpts()
			opts.DryRun = dry
			got, sum := runMigration(t, to, root, f.b, opts)
			if r := got[key]; r.Action != migrate.Failed || !strings.Contains(r.Cause, tmp) || !strings.Contains(r.Cause, "not a regular file") || !strings.Contains(r.Cause, "remove it by hand") || sum.Complete() {
				t.Errorf("to etcd %v, dry run %v: %s %q; want failed, naming the temp, that it is not a regular file, and to remove it by hand", to, dry, r.Action, r.Cause)
			}
		}
	}
	if after := entries(); after != before {
		t.Errorf("the key dir after the failed runs: %s; before: %s", after, before)
	}
	if n := len(etcdOf(t, c, f.prefix)); n != inEtcd {
		t.Errorf("etcd holds %d keys after the failed runs, %d before", n, inEtcd)
	}
}

// A committed promotion's temp that is a regular file but not what its
// commit recorded (damaged) is removed by the run's roll-forward, the
// record left pending, and the run then moves the generation before it,
// which the store serves. The dry runs read the damaged temp as the key's
// transcript instead: --to etcd planned its bytes as a transcript that
// does not match its record (transcript-replaced), or a conflict for a key
// etcd already holds, and --from etcd a conflict, each where the run says
// migrate or already. They now plan what the runs do.
func TestMigrateDryRunsOfADamagedPendingTempPlanWhatTheRunsDo(t *testing.T) {
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	root := t.TempDir()
	h := newHostBuilder(t, root)
	moved, fresh := store.Key("github", "damaged-temp", "moved"), store.Key("github", "damaged-temp", "fresh")
	h.mustPromote(moved, migJob, "m1", store.PromoteRequest{})
	if got, _ := runMigration(t, true, root, f.b, migOpts()); got[moved].Action != migrate.Migrated {
		t.Fatalf("the key's first move into etcd: %+v", got[moved])
	}
	h.mustPromote(fresh, migJob, "f1", store.PromoteRequest{})
	for _, key := range []string{moved, fresh} {
		h.crashAfterCommit(key, migJob, "2")
		tmp := h.pendingTemp(key)
		if err := os.Truncate(tmp, 100); err != nil {
			t.Fatal(err)
		}
	}
	plan := func(r MigrateReport) string {
		s := string(r.Action)
		if r.Values != nil && r.Values.Transcript != nil {
			s += fmt.Sprintf(" %d bytes crc32c %s", r.Values.Transcript.Size, r.Values.Transcript.CRC32C)
		}
		return s
	}
	dry := migOpts()
	dry.DryRun = true
	plannedTo, _ := runMigration(t, true, root, f.b, dry)
	plannedFrom, _ := runMigration(t, false, root, f.b, dry)
	didTo, _ := runMigration(t, true, root, f.b, migOpts())
	didFrom, _ := runMigration(t, false, root, f.b, migOpts())
	for _, key := range []string{moved, fresh} {
		if p, d := plan(plannedTo[key]), plan(didTo[key]); p != d || d == string(migrate.Failed) {
			t.Errorf("--to etcd of %s: the dry run planned %s (%s), the run did %s (%s)", key[:8], p, plannedTo[key].Cause, d, didTo[key].Cause)
		}
	}
	if p, d := plan(plannedFrom[moved]), plan(didFrom[moved]); p != d || didFrom[moved].Action != migrate.Already {
		t.Errorf("--from etcd: the dry run planned %s (%s), the run did %s (%s); want already, both", p, plannedFrom[moved].Cause, d, didFrom[moved].Cause)
	}
}

// A directory at current.jsonl under a committed promotion whose temp is
// whole: the run's roll-forward cannot rename the temp over it, and each
// run fails the key; the dry runs planned it moved as the temp (--to
// etcd: "migrate", exit 0). They now fail it with the run's error.
func TestMigrateDryRunsOfAPromotionBlockedByADirectoryFailAsTheRuns(t *testing.T) {
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	root := t.TempDir()
	h := newHostBuilder(t, root)
	key := store.Key("github", "blocked-temp", "a")
	h.mustPromote(key, migJob, "a1", store.PromoteRequest{})
	if got, _ := runMigration(t, true, root, f.b, migOpts()); got[key].Action != migrate.Migrated {
		t.Fatalf("the key's first move into etcd: %+v", got[key])
	}
	h.crashAfterCommit(key, migJob, "a2")
	cur := h.path(key, store.TranscriptName)
	if err := os.Remove(cur); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(cur, 0o700); err != nil {
		t.Fatal(err)
	}
	dry := migOpts()
	dry.DryRun = true
	for _, to := range []bool{true, false} {
		planned, _ := runMigration(t, to, root, f.b, dry)
		got, _ := runMigration(t, to, root, f.b, migOpts())
		if p, r := planned[key], got[key]; p.Action != migrate.Failed || r.Action != migrate.Failed || p.Cause != r.Cause {
			t.Errorf("to etcd %v: the dry run planned %s %q; the run did %s %q; want both failed alike", to, p.Action, p.Cause, r.Action, r.Cause)
		}
	}
}

// The runs of --to etcd and --from etcd over a committed promotion whose
// temp is damaged say what their roll-forward did: it removed the temp and
// left the record pending, and the run moved the generation before it, as
// the dry run says it would. The runs said "rolled forward first", the
// word for a promotion renamed into place, of one that was discarded. And
// --from etcd's dry run listed the temps as files it removes, which its
// run, whose roll-forward sweeps them, does not list (as for a whole temp).
func TestMigrateRunsOfADamagedPendingTempSayTheTempWasRemoved(t *testing.T) {
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	for _, to := range []bool{true, false} {
		root := t.TempDir()
		h := newHostBuilder(t, root)
		key := store.Key("github", "damaged-temp-said", fmt.Sprint(to))
		h.mustPromote(key, migJob, "1", store.PromoteRequest{})
		if got, _ := runMigration(t, true, root, f.b, migOpts()); got[key].Action != migrate.Migrated {
			t.Fatalf("the key's first move into etcd: %+v", got[key])
		}
		h.crashAfterCommit(key, migJob, "2")
		tmp := h.pendingTemp(key)
		if err := os.Truncate(tmp, 100); err != nil {
			t.Fatal(err)
		}
		dry := migOpts()
		dry.DryRun = true
		planned, _ := runMigration(t, to, root, f.b, dry)
		did, _ := runMigration(t, to, root, f.b, migOpts())
		said := func(r MigrateReport) string {
			var s []string
			for _, o := range r.Oddities {
				if o.File == "meta.db" {
					s = append(s, o.Found+": "+o.ReadAs)
				}
			}
			return strings.Join(s, "; ")
		}
		if p, d := said(planned[key]), said(did[key]); !strings.Contains(p, "would be removed") || !strings.Contains(d, "whose temp was not what its commit recorded") || strings.Contains(d, "rolled forward first") {
			t.Errorf("to etcd %v: the dry run said %q, the run %q; want the run to say its roll-forward removed the damaged temp, as the dry run says it would", to, p, d)
		}
		if _, err := os.Lstat(tmp); !os.IsNotExist(err) {
			t.Errorf("to etcd %v: the damaged temp after the run: %v; want it removed", to, err)
		}
		// The files it lists removed, as the run lists them (with a
		// promotion in flight, none: the roll-forward sweeps them).
		if p, d := fmt.Sprint(planned[key].Removed), fmt.Sprint(did[key].Removed); p != d {
			t.Errorf("to etcd %v: the dry run lists %s removed, the run %s", to, p, d)
		}
	}
}
