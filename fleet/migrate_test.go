package fleet

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"golang.org/x/sys/unix"

	"sessdb/db"
	"sessdb/fleet/etcdmeta"
	"sessdb/gates"
	"sessdb/internal/etcdtest"
	"sessdb/internal/faults"
	"sessdb/internal/fsat"
	"sessdb/migrate"
	"sessdb/store"
)

// compare reports every cell where got differs from want, for the keys
// whose difference is not explained.
func compare(t *testing.T, phase string, want, got map[string]string, explained map[string]string, label map[string]string) int {
	t.Helper()
	n, diffs := 0, 0
	for cell, v := range want {
		key := cell[:32]
		if got[cell] == v {
			continue
		}
		diffs++
		if _, ok := explained[key]; ok {
			continue
		}
		if n++; n <= 20 {
			t.Errorf("%s: %s (%s): %s, was %s", phase, cell, label[key], got[cell], v)
		}
	}
	if n > 20 {
		t.Errorf("%s: %d more", phase, n-20)
	}
	return diffs
}

func migOpts() MigrateOptions {
	return MigrateOptions{LockTimeout: 10 * time.Second, Now: func() time.Time { return migNow }}
}

// runMigration runs ToEtcd (to) or FromEtcd and returns its reports by key.
func runMigration(t *testing.T, to bool, root string, b *Backend, opts MigrateOptions) (map[string]MigrateReport, MigrateSummary) {
	t.Helper()
	got := map[string]MigrateReport{}
	visit := func(r MigrateReport) error {
		if _, dup := got[r.Key]; dup {
			t.Errorf("%s reported twice", r.Key)
		}
		got[r.Key] = r
		return nil
	}
	var sum MigrateSummary
	var err error
	if to {
		sum, err = ToEtcd(context.Background(), root, b, opts, visit)
	} else {
		sum, err = FromEtcd(context.Background(), b, root, opts, visit)
	}
	if err != nil {
		t.Fatalf("migrate: %v", err)
	}
	return got, sum
}

func keysOf(cases []hostCase) ([]string, map[string]string) {
	var keys []string
	label := map[string]string{}
	for _, c := range cases {
		keys = append(keys, c.key)
		label[c.key] = c.name
	}
	return keys, label
}

// TestMigrateVerdictParity is the claim: every key of a varied
// single-host root gets the same verdict, for every job and bound, on the
// root, then on the fleet after ToEtcd, then on a fresh root after
// FromEtcd; a key that cannot move is reported and its difference is the
// one its case explains; and a promotion made on the fleet in between
// comes back with the rest.
func TestMigrateVerdictParity(t *testing.T) {
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	root := t.TempDir()
	cases := buildHostRoot(t, root)
	keys, label := keysOf(cases)
	ps := migProfiles()
	before := verdicts(t, onRoot(t, root), keys, ps)

	// The table must exercise the ladder, or equality proves nothing.
	seen := map[string]bool{}
	for _, v := range before {
		seen[strings.Fields(v)[1]] = true
	}
	for _, r := range []gates.Reason{gates.Resumed, gates.Absent, gates.TooLarge, gates.MetaUnreadable, gates.Expired, gates.VenueChanged,
		gates.PiVersionChanged, gates.ResumeChainTooLong, gates.ContextTooFull, gates.ConversationTooOld, gates.TranscriptReplaced} {
		if !seen[string(r)] {
			t.Errorf("no key of the root is %s under any profile", r)
		}
	}

	reports, sum := runMigration(t, true, root, f.b, migOpts())
	explained := map[string]string{}
	for _, hc := range cases {
		r := reports[hc.key]
		if r.Action != hc.to {
			t.Errorf("%s: to etcd %s (%s), want %s", hc.name, r.Action, r.Cause, hc.to)
		}
		if hc.why != "" {
			explained[hc.key] = hc.why
		}
	}
	if sum.Entries != len(cases)+2 || sum.Skipped != 3 || sum.Failed != 2 || sum.Complete() {
		t.Errorf("to etcd: %+v", sum)
	}
	t.Logf("to etcd: %+v", sum)
	fleet := verdicts(t, onFleet(f.b), keys, ps)
	diffs := compare(t, "on the fleet", before, fleet, explained, label)
	for _, hc := range cases {
		if hc.why == "" {
			continue
		}
		for _, p := range ps {
			if v := fleet[hc.key+" | "+p.name]; v != "false absent" {
				t.Errorf("%s: %s on the fleet, want false absent (%s)", hc.name, v, hc.why)
			}
		}
	}

	// A job on the fleet between the two directions.
	promoted := cases[0].key
	f.now = migNow
	res := f.run(promoted, "promoted on the fleet")
	afterPromotion := verdicts(t, onFleet(f.b), keys, ps)

	back := t.TempDir()
	reports, sum = runMigration(t, false, back, f.b, migOpts())
	for _, hc := range cases {
		want := migrate.Migrated
		if hc.to != migrate.Migrated {
			want = ""
		}
		if r := reports[hc.key]; r.Action != want {
			t.Errorf("%s: from etcd %q (%s), want %q", hc.name, r.Action, r.Cause, want)
		}
	}
	if !sum.Complete() || sum.Migrated != len(cases)-3 {
		t.Errorf("from etcd: %+v", sum)
	}
	t.Logf("from etcd: %+v", sum)
	returned := verdicts(t, onRoot(t, back), keys, ps)
	compare(t, "back on a root", afterPromotion, returned, map[string]string{}, label)
	sameRecords(t, f.b, back, keys)

	s, err := store.New(back, store.Options{Now: func() time.Time { return migNow }})
	if err != nil {
		t.Fatal(err)
	}
	sess, jobDir := resolveOn(t, s, promoted)
	if m := markers(stagedOf(t, jobDir)); !sess.Resume || sess.Gen() != res.Gen || m[len(m)-1] != "promoted on the fleet" {
		t.Errorf("the fleet's promotion came back as gen %d ending %q (%s), want gen %d", sess.Gen(), m[len(m)-1], sess.Reason, res.Gen)
	}
	t.Logf("%d keys x %d profiles compared three times; %d cells differ on the fleet, all in the %d keys that did not move",
		len(keys), len(ps), diffs, len(explained))
}

// sameRecords requires every etcd key's record and history in the key
// dir of root that FromEtcd wrote: the same values, the same entries (seq
// apart: meta.db numbers its own).
func sameRecords(t *testing.T, b *Backend, root string, keys []string) {
	t.Helper()
	for _, k := range keys {
		st, err := b.meta.Get(context.Background(), k)
		if err != nil {
			t.Fatal(err)
		}
		if st.Rev == 0 {
			continue
		}
		sc, hist := hostState(t, filepath.Join(root, k))
		sc.Pending = nil
		if want := sidecarsOf(st.Record); !reflect.DeepEqual(sc, want) {
			t.Errorf("%s: meta.db holds %s, etcd %s", k, fmtSC(sc), fmtSC(want))
		}
		got, want := historyOf(hostHistory(hist)), historyOf(st.History)
		for i := range got {
			got[i].Seq = 0
		}
		for i := range want {
			want[i].Seq = 0
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: meta.db's history %+v\netcd's %+v", k, got, want)
		}
	}
}

func fmtSC(sc db.Sidecars) string {
	s := fmt.Sprintf("%+v", *valuesOf(recordOf(sc, "")))
	if t := sc.Transcript; t != nil {
		s += fmt.Sprintf(" %+v", *t)
	}
	return s
}

// hostState reads a key dir's sidecars and history.
func hostState(t *testing.T, dir string) (db.Sidecars, []db.HistoryEntry) {
	t.Helper()
	kd, err := fsat.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer kd.Close()
	d, sc, err := db.OpenSidecars(kd, db.Options{LockTimeout: 10 * time.Second}, false)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var hist []db.HistoryEntry
	if err := d.View(func(tx *db.Tx) (err error) { hist, err = tx.History(0); return err }); err != nil {
		t.Fatal(err)
	}
	return sc, hist
}

// treeOf describes every entry under dir without following links: kind,
// mode, mtime, and a file's bytes.
func treeOf(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		desc := fmt.Sprintf("%v %d", fi.Mode(), fi.ModTime().UnixNano())
		if fi.Mode().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			desc += fmt.Sprintf(" %x", sha256.Sum256(b))
		}
		rel, _ := filepath.Rel(dir, p)
		out[rel] = desc
		return nil
	})
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return out
}

// etcdOf is every key and value under the fleet's prefix, with their mod
// revisions.
func etcdOf(t *testing.T, c *etcdtest.Cluster, prefix string) map[string]string {
	t.Helper()
	cli := c.Client(t)
	resp, err := cli.Get(context.Background(), prefix+"/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, kv := range resp.Kvs {
		// The fleet's ID is the fleet's, no key's: its first writer makes
		// it (Claim), whatever becomes of the key it writes.
		if string(kv.Key) != prefix+"/fleet" {
			out[string(kv.Key)] = fmt.Sprintf("%d %x", kv.ModRevision, sha256.Sum256(kv.Value))
		}
	}
	return out
}

func diffMaps(a, b map[string]string) string {
	var out []string
	for k, v := range a {
		if b[k] != v {
			out = append(out, fmt.Sprintf("%s: %q -> %q", k, v, b[k]))
		}
	}
	for k, v := range b {
		if _, ok := a[k]; !ok {
			out = append(out, fmt.Sprintf("%s: new %q", k, v))
		}
	}
	sort.Strings(out)
	return strings.Join(out, "\n")
}

// TestMigrateTwiceChangesNothing: a second run, in each direction, reports
// every key it moved already, and changes nothing: not a byte or an mtime
// under either root, not a file in the transcripts dir, not a key or a
// revision in etcd.
func TestMigrateTwiceChangesNothing(t *testing.T) {
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	root := t.TempDir()
	cases := buildHostRoot(t, root)
	// Four keys at once, the reports still in name order (runMigration
	// takes them as they come; ToEtcd's own order is checked here).
	opts := migOpts()
	opts.Workers = 4
	var order []string
	progress := 0
	opts.Progress = func(done, total int) {
		if done != progress+1 || total != len(cases)+2 {
			t.Errorf("progress %d/%d after %d", done, total, progress)
		}
		progress = done
	}
	first := map[string]MigrateReport{}
	if _, err := ToEtcd(context.Background(), root, f.b, opts, func(r MigrateReport) error {
		order = append(order, r.Key)
		first[r.Key] = r
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if !sort.StringsAreSorted(order) || progress != len(cases)+2 {
		t.Errorf("reports in the order %v, progress %d", order, progress)
	}
	snap := func(dirs ...string) map[string]string {
		out := etcdOf(t, c, f.prefix)
		for _, d := range dirs {
			for p, v := range treeOf(t, d) {
				out[d+"/"+p] = v
			}
		}
		return out
	}
	back := t.TempDir()
	runMigration(t, false, back, f.b, migOpts())
	was := snap(root, back, f.dir)
	again, sum := runMigration(t, true, root, f.b, migOpts())
	for _, hc := range cases {
		want := hc.to
		if want == migrate.Migrated {
			want = migrate.Already
		}
		if r := again[hc.key]; r.Action != want || r.Cause != first[hc.key].Cause && want != migrate.Already {
			t.Errorf("%s: again %s (%s), want %s", hc.name, r.Action, r.Cause, want)
		}
	}
	t.Logf("to etcd again: %+v", sum)
	back2, sum := runMigration(t, false, back, f.b, migOpts())
	for k, r := range back2 {
		if r.Action != migrate.Already {
			t.Errorf("%s: from etcd again %s (%s)", k, r.Action, r.Cause)
		}
	}
	if sum.Already != len(back2) || sum.Already == 0 {
		t.Errorf("from etcd again: %+v", sum)
	}
	if d := diffMaps(was, snap(root, back, f.dir)); d != "" {
		t.Errorf("a second run changed:\n%s", d)
	}
}

// TestMigrateDryRunChangesNothing: a dry run in each direction reports
// what the run then does, and changes nothing anywhere; a dry FromEtcd
// does not even make the root.
func TestMigrateDryRunChangesNothing(t *testing.T) {
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	root := t.TempDir()
	cases := buildHostRoot(t, root)
	was := treeOf(t, root)
	dry := migOpts()
	dry.DryRun = true
	planned, sum := runMigration(t, true, root, f.b, dry)
	if !sum.DryRun {
		t.Error("the summary does not say dry run")
	}
	if d := diffMaps(was, treeOf(t, root)); d != "" {
		t.Errorf("a dry run changed the root:\n%s", d)
	}
	if n := len(etcdOf(t, c, f.prefix)); n != 0 {
		t.Errorf("a dry run wrote %d etcd keys", n)
	}
	if id, err := f.b.meta.FleetID(t.Context(), false); id != "" || err != nil {
		t.Errorf("a dry run made the fleet's ID %q (%v)", id, err)
	}
	if d := treeOf(t, f.dir); len(d) != 1 {
		t.Errorf("a dry run wrote into the transcripts dir: %v", d)
	}
	done, _ := runMigration(t, true, root, f.b, migOpts())
	for _, hc := range cases {
		if p, r := planned[hc.key], done[hc.key]; p.Action != r.Action || !reflect.DeepEqual(p.Values, r.Values) {
			t.Errorf("%s: the dry run said %s %+v, the run did %s %+v", hc.name, p.Action, p.Values, r.Action, r.Values)
		}
	}

	back := filepath.Join(t.TempDir(), "not-yet")
	plannedBack, _ := runMigration(t, false, back, f.b, dry)
	if _, err := os.Lstat(back); !os.IsNotExist(err) {
		t.Errorf("a dry run made the root: %v", err)
	}
	etcdWas := etcdOf(t, c, f.prefix)
	doneBack, _ := runMigration(t, false, back, f.b, migOpts())
	for k, r := range doneBack {
		if p := plannedBack[k]; p.Action != r.Action || !reflect.DeepEqual(p.Written, r.Written) {
			t.Errorf("%s: the dry run said %s %v, the run did %s %v", k, p.Action, p.Written, r.Action, r.Written)
		}
	}
	// Dry again, on a root half done: one key's dir removed.
	os.RemoveAll(filepath.Join(back, cases[0].key))
	was = treeOf(t, back)
	plannedBack, _ = runMigration(t, false, back, f.b, dry)
	if r := plannedBack[cases[0].key]; r.Action != migrate.Migrated {
		t.Errorf("a dry run on a missing key dir: %s (%s)", r.Action, r.Cause)
	}
	if d := diffMaps(was, treeOf(t, back)); d != "" {
		t.Errorf("a dry run changed the root:\n%s", d)
	}
	if d := diffMaps(etcdWas, etcdOf(t, c, f.prefix)); d != "" {
		t.Errorf("etcd changed under FromEtcd:\n%s", d)
	}
}

// TestMigrateBackIntoItsOwnRoot: FromEtcd into the root ToEtcd read brings
// forward the keys the fleet promoted since (rewrote, too), finds the
// others in place,
// and leaves alone a key promoted on both sides (a conflict), as ToEtcd
// then does too.
func TestMigrateBackIntoItsOwnRoot(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	root := t.TempDir()
	h := newHostBuilder(t, root)
	plain, forward, both := store.Key("github", "own", "plain"), store.Key("github", "own", "forward"), store.Key("github", "own", "both")
	for _, k := range []string{plain, forward, both} {
		h.mustPromote(k, migJob, "h1", store.PromoteRequest{})
	}
	runMigration(t, true, root, f.b, migOpts())
	f.now = migNow
	f.run(forward, "fleet 2")
	f.run(forward, "fleet 3")
	f.run(both, "fleet 2")
	h.now = migNow
	// The same length as "fleet 2": the two gen 2s are the same size, and
	// only their checksums tell them apart.
	h.mustPromote(both, migJob, "hosts 2", store.PromoteRequest{})
	// A key the fleet rewrote since (--allow-rewrite): its gen 2 does not
	// begin with the key dir's gen 1, and descends from it by the history
	// alone, which holds gen 1's entry.
	rewritten := store.Key("github", "own", "rewritten")
	h.now = migNow.Add(-time.Hour)
	h.mustPromote(rewritten, migJob, "h1", store.PromoteRequest{})
	runMigration(t, true, root, f.b, migOpts())
	h.now = migNow
	sess, jobDir := resolveOn(t, f.s, rewritten)
	if err := os.WriteFile(filepath.Join(jobDir, store.StagedDirName, store.TranscriptName), convo(migNow.Add(-48*time.Hour), "rewritten"), 0o600); err != nil {
		t.Fatal(err)
	}
	if res, err := f.s.Promote(sess, store.PromoteRequest{PiVersion: migPi, AllowRewrite: true}); err != nil || !res.Promoted || !res.Rewritten {
		t.Fatalf("the fleet's rewrite: %+v, %v", res, err)
	}

	again, _ := runMigration(t, true, root, f.b, migOpts())
	for _, k := range []string{forward, rewritten} {
		if r := again[k]; r.Action != migrate.Already || !strings.Contains(r.Cause, "promoted it since") {
			t.Errorf("to etcd, a key the fleet promoted: %s (%s)", r.Action, r.Cause)
		}
	}
	if r := again[both]; r.Action != Conflict {
		t.Errorf("to etcd, a key promoted on both sides: %s (%s)", r.Action, r.Cause)
	}
	keys := []string{plain, forward, both}
	ps := migProfiles()
	fleet := verdicts(t, onFleet(f.b), keys, ps)
	hostBoth := verdicts(t, onRoot(t, root), []string{both}, ps)
	reports, sum := runMigration(t, false, root, f.b, migOpts())
	for k, want := range map[string]migrate.Action{plain: migrate.Already, forward: migrate.Migrated, both: Conflict, rewritten: migrate.Migrated} {
		if r := reports[k]; r.Action != want {
			t.Errorf("from etcd: %s (%s), want %s", r.Action, r.Cause, want)
		}
	}
	if sum.Complete() || sum.Conflicts != 1 {
		t.Errorf("from etcd: %+v", sum)
	}
	t.Logf("%s: %s", reports[forward].Action, reports[forward].Cause)
	got := verdicts(t, onRoot(t, root), keys, ps)
	for cell, v := range fleet {
		if cell[:32] == both {
			v = hostBoth[cell]
		}
		if got[cell] != v {
			t.Errorf("%s: %s, want %s", cell, got[cell], v)
		}
	}
	sameRecords(t, f.b, root, []string{plain})
	// The history the key had before the migration, then the fleet's.
	_, hist := hostState(t, filepath.Join(root, forward))
	var gens []uint64
	for _, e := range hist {
		gens = append(gens, e.Gen)
	}
	if !reflect.DeepEqual(gens, []uint64{1, 2, 3}) {
		t.Errorf("brought forward, the history has gens %v", gens)
	}
}

// TestMigrateLockedKey: a key whose meta.db lock is held past the timeout
// is locked, untouched, and a re-run moves it.
func TestMigrateLockedKey(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	root := t.TempDir()
	h := newHostBuilder(t, root)
	key := store.Key("github", "locked", "a")
	h.mustPromote(key, migJob, "a1", store.PromoteRequest{})
	kd, err := fsat.OpenDir(h.path(key))
	if err != nil {
		t.Fatal(err)
	}
	defer kd.Close()
	d, err := db.OpenWriter(kd, h.path(key, db.FileName), db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	opts := migOpts()
	opts.LockTimeout = 50 * time.Millisecond
	reports, sum := runMigration(t, true, root, f.b, opts)
	if r := reports[key]; r.Action != migrate.Locked || sum.Locked != 1 || sum.Complete() {
		t.Errorf("a held key: %s (%s), %+v", r.Action, r.Cause, sum)
	}
	if n := len(etcdOf(t, c, f.prefix)); n != 0 {
		t.Errorf("a locked key wrote %d etcd keys", n)
	}
	d.Close()
	if reports, _ = runMigration(t, true, root, f.b, opts); reports[key].Action != migrate.Migrated {
		t.Errorf("released: %s (%s)", reports[key].Action, reports[key].Cause)
	}
}

// TestMigrateStopsOnCancel: the end of the context starts no new key; the
// summary says interrupted, and a re-run finishes.
func TestMigrateStopsOnCancel(t *testing.T) {
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	root := t.TempDir()
	cases := buildHostRoot(t, root)
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	sum, err := ToEtcd(ctx, root, f.b, migOpts(), func(MigrateReport) error {
		if n++; n == 3 {
			cancel()
		}
		return nil
	})
	// The keys already under way when the context ended finish and are
	// reported; no new one starts.
	if !errors.Is(err, context.Canceled) || !sum.Interrupted || sum.Entries < 3 || sum.Entries >= len(cases) {
		t.Fatalf("cancelled after 3: %+v, %v", sum, err)
	}
	reports, _ := runMigration(t, true, root, f.b, migOpts())
	for _, hc := range cases {
		if r := reports[hc.key]; r.Action != hc.to && !(hc.to == migrate.Migrated && r.Action == migrate.Already) {
			t.Errorf("%s: after the interrupt %s (%s)", hc.name, r.Action, r.Cause)
		}
	}
}

// TestMigrateReportJSON: reports and summaries marshal in migrate's
// shape, with the direction, the conflicts and the run's time.
func TestMigrateReportJSON(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	root := t.TempDir()
	h := newHostBuilder(t, root)
	key := store.Key("github", "json", "a")
	h.mustPromote(key, migJob, "a1", store.PromoteRequest{})
	reports, sum := runMigration(t, true, root, f.b, migOpts())
	r := reports[key]
	j, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	json.Unmarshal(j, &got)
	for _, field := range []string{"key", "action", "cause", "values", "oddities", "removed", "written"} {
		if _, ok := got[field]; !ok {
			t.Errorf("report %s lacks %q", j, field)
		}
	}
	if len(r.Written) != 2 || !strings.HasPrefix(r.Written[0], key+"/0000000000000001-") || r.Written[1] != f.prefix+"/record/"+key {
		t.Errorf("written %v", r.Written)
	}
	j, _ = json.Marshal(sum)
	got = nil
	json.Unmarshal(j, &got)
	for _, field := range []string{"direction", "dry_run", "entries", "keys", "migrated", "already", "skipped", "locked", "failed", "conflicts", "elapsed_seconds", "interrupted"} {
		if _, ok := got[field]; !ok {
			t.Errorf("summary %s lacks %q", j, field)
		}
	}
	if got["direction"] != "to-etcd" {
		t.Errorf("summary %s", j)
	}
	// The run took time, and elapsed_seconds says how much.
	if secs, _ := got["elapsed_seconds"].(float64); secs <= 0 {
		t.Errorf("summary %s: elapsed_seconds %v, want the run's time", j, got["elapsed_seconds"])
	}
}

// TestMigrateHostile: what neither side should hold is reported with its
// reason, never followed, never blocks, and writes nothing for its key;
// the other keys move.
func TestMigrateHostile(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	root := t.TempDir()
	h := newHostBuilder(t, root)
	plain, link, fifo := store.Key("github", "hostile", "plain"), store.Key("github", "hostile", "link"), store.Key("github", "hostile", "fifo")
	for _, k := range []string{plain, link, fifo} {
		h.mustPromote(k, migJob, "h1", store.PromoteRequest{})
	}
	secret := filepath.Join(t.TempDir(), "secret")
	os.WriteFile(secret, []byte("not a transcript\n"), 0o600)
	os.Remove(h.path(link, store.TranscriptName))
	if err := os.Symlink(secret, h.path(link, store.TranscriptName)); err != nil {
		t.Fatal(err)
	}
	os.Remove(h.path(fifo, store.TranscriptName))
	if err := unix.Mkfifo(h.path(fifo, store.TranscriptName), 0o600); err != nil {
		t.Fatal(err)
	}
	reports, _ := runMigration(t, true, root, f.b, migOpts())
	for k, want := range map[string]string{link: "is a link", fifo: "not a regular file", plain: ""} {
		r := reports[k]
		if want == "" && r.Action != migrate.Migrated || want != "" && (r.Action != migrate.Failed || !strings.Contains(r.Cause, want)) {
			t.Errorf("to etcd: %s (%s), want %q", r.Action, r.Cause, want)
		}
		if st, _ := f.b.meta.Get(context.Background(), k); want != "" && st.Rev != 0 {
			t.Errorf("to etcd wrote a record for a key it failed")
		}
	}

	ctx := context.Background()
	cli := c.Client(t)
	damaged, foreign, gone, linked, taken := store.Key("e", "x", "damaged"), store.Key("e", "x", "foreign"), store.Key("e", "x", "gone"), store.Key("e", "x", "linked"), store.Key("e", "x", "taken")
	if _, err := cli.Put(ctx, f.prefix+"/record/"+damaged, "\xc1"); err != nil {
		t.Fatal(err)
	}
	put := func(key, file string) {
		t.Helper()
		sc := db.Sidecars{Transcript: &db.Transcript{Gen: 1, Size: 17, CRC32C: 1}, PiVersion: new(string)}
		if _, err := f.b.meta.Put(ctx, key, 0, recordOf(sc, file), etcdmeta.HistoryEntry{Gen: 1}); err != nil {
			t.Fatal(err)
		}
	}
	put(foreign, plain+"/../../../etc/passwd")
	put(gone, gone+"/0000000000000001-00000000000000aa.jsonl")
	os.MkdirAll(filepath.Join(f.dir, linked), 0o700)
	os.Symlink(secret, filepath.Join(f.dir, linked, "0000000000000001-00000000000000bb.jsonl"))
	put(linked, linked+"/0000000000000001-00000000000000bb.jsonl")
	f.run(taken, "t1")
	// Records naming a real file that is not theirs: another key's, and
	// one of another generation of their own key.
	borrowed, othergen := store.Key("e", "x", "borrowed"), store.Key("e", "x", "othergen")
	put(borrowed, f.recordFile(taken))
	os.MkdirAll(filepath.Join(f.dir, othergen), 0o700)
	os.WriteFile(filepath.Join(f.dir, othergen, "0000000000000002-00000000000000cc.jsonl"), []byte(testHeader), 0o600)
	put(othergen, othergen+"/0000000000000002-00000000000000cc.jsonl")
	back := t.TempDir()
	elsewhere := t.TempDir()
	if err := os.Symlink(elsewhere, filepath.Join(back, taken)); err != nil {
		t.Fatal(err)
	}
	reports, sum := runMigration(t, false, back, f.b, migOpts())
	for k, want := range map[string]string{damaged: "damaged", foreign: "not a file of this key", gone: "is gone", linked: "not a regular file", taken: "link or not a directory", plain: "",
		borrowed: "not a file of this key", othergen: "not a file of this key"} {
		r := reports[k]
		switch {
		case want == "" && r.Action != migrate.Migrated:
			t.Errorf("from etcd %s: %s (%s)", k, r.Action, r.Cause)
		case want != "" && (r.Action != migrate.Failed && r.Action != Conflict || !strings.Contains(r.Cause, want)):
			t.Errorf("from etcd %s: %s (%s), want %q", k, r.Action, r.Cause, want)
		}
	}
	if sum.Complete() || sum.Failed != 6 || sum.Conflicts != 1 {
		t.Errorf("from etcd: %+v", sum)
	}
	ents, _ := os.ReadDir(back)
	if len(ents) != 2 {
		t.Errorf("from etcd made %d entries in the root, want the plain key's dir and the link", len(ents))
	}
	if ents, _ := os.ReadDir(elsewhere); len(ents) != 0 {
		t.Errorf("from etcd wrote through a linked key dir: %v", ents)
	}
}

// After ToEtcd, the fleet numbers a key's next generation from its history
// as the key dir would, even where the record names a lower one: a key
// whose transcript was gone (the record moved in without one) or whose
// last promotion's temp was lost (the record names the generation before
// it). The fleet promoted gen 1 over a history up to gen 3 before (found
// by an audit).
func TestFleetNumbersGenerationsAboveAMovedHistory(t *testing.T) {
	f := newFixture(t, etcdtest.Start1(t))
	root := t.TempDir()
	hs, err := store.New(root, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	promoteOn := func(s *store.Store, key, marker string) store.PromoteResult {
		t.Helper()
		sess, jobDir := resolveOn(t, s, key)
		appendMarker(t, jobDir, marker)
		res, err := s.Promote(sess, store.PromoteRequest{PiVersion: testJob.PiVersion})
		if err != nil || !res.Promoted {
			t.Fatalf("promote %s: %+v, %v", marker, res, err)
		}
		return res
	}
	absent, prev := store.Key("github", "moved", "absent"), store.Key("github", "moved", "prev")
	for _, key := range []string{absent, prev} {
		for _, m := range []string{"a", "b", "c"} {
			promoteOn(hs, key, m)
		}
	}
	if err := os.Remove(filepath.Join(root, absent, store.TranscriptName)); err != nil {
		t.Fatal(err)
	}
	// prev: a fourth promotion committed, its temp lost before the rename;
	// the key dir serves gen 3, its history names gen 4.
	sess, jobDir := resolveOn(t, hs, prev)
	appendMarker(t, jobDir, "d")
	faults.Set(func(p faults.Point) error {
		if p == faults.PromoteAfterCommit {
			return errors.New("killed")
		}
		return nil
	})
	_, err = hs.Promote(sess, store.PromoteRequest{PiVersion: testJob.PiVersion})
	faults.Set(nil)
	if err == nil {
		t.Fatal("the promotion was not stopped after its commit")
	}
	temps, _ := filepath.Glob(filepath.Join(root, prev, ".current.jsonl.tmp-*"))
	for _, tmp := range temps {
		os.Remove(tmp)
	}
	if _, err := ToEtcd(t.Context(), root, f.b, MigrateOptions{}, func(MigrateReport) error { return nil }); err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]uint64{absent: 4, prev: 5} {
		if res := promoteOn(f.s, key, "next"); res.Gen != want {
			t.Errorf("%s: the fleet's next promotion is gen %d, want %d (above the moved history)", key, res.Gen, want)
		}
		// and the one after takes the fast path again
		if res := promoteOn(f.s, key, "after"); res.Gen != want+1 {
			t.Errorf("%s: the promotion after it is gen %d, want %d", key, res.Gen, want+1)
		}
	}
}

// A key whose damaged meta.db check --repair moved aside has no record
// and no legacy files that sessdb migrate would record: ToEtcd refuses it
// and says what settles it (before: "run sessdb migrate first", which
// skips such a key).
func TestMigrateMovedAsideKeySaysWhatSettlesIt(t *testing.T) {
	etcdtest.Beside(t)
	c := etcdtest.Start1(t)
	f := newFixture(t, c)
	root := t.TempDir()
	h := newHostBuilder(t, root)
	key := store.Key("github", "aside", "a")
	h.mustPromote(key, migJob, "a1", store.PromoteRequest{})
	if err := os.Rename(h.path(key, db.FileName), h.path(key, store.AsidePrefix+"20261201T120000Z")); err != nil {
		t.Fatal(err)
	}
	reports, _ := runMigration(t, true, root, f.b, migOpts())
	if r := reports[key]; r.Action != migrate.Failed || !strings.Contains(r.Cause, "check --repair --accept") {
		t.Errorf("a key with its meta.db moved aside: %s (%s), want failed naming check --repair --accept", r.Action, r.Cause)
	}
	if n := len(etcdOf(t, c, f.prefix)); n != 0 {
		t.Errorf("the refused key wrote %d etcd keys", n)
	}
}

// A migration stalled or suspended between a key's file and its record
// for longer than a reaper waits for a commit creates no record: the
// file may have been swept as a dead write's, and a record naming it
// would have the key resolve transcript-replaced while a re-run called
// it already moved. The key is failed, its file removed, its key dir as
// it was; a re-run moves it. It was created, naming the file.
func TestMigrateStalledPastTheWindowCreatesNothing(t *testing.T) {
	// In process: the lost answer is LoseNext's, an interceptor fault.
	f := newFixture(t, etcdtest.Start(t, etcdtest.Options{Members: 1, InProcess: true}))
	key := store.Key("github", "moved", "stalled")
	root := promotedOnHost(t, key, "a")
	faults.Set(func(p faults.Point) error {
		if p == faults.ToEtcdWritten {
			f.now = time.Now().Add(commitWindow + time.Minute) // the wall clock after the stall
		}
		return nil
	})
	got, _ := runMigration(t, true, root, f.b, MigrateOptions{})
	faults.Set(nil)
	if r := got[key]; r.Action != migrate.Failed {
		t.Errorf("the stalled key = %+v, want failed", r)
	}
	if st, err := f.b.meta.GetRecord(t.Context(), key); st.Rev != 0 || err != nil {
		t.Fatalf("the stalled key has a record at %d (%v), want none", st.Rev, err)
	}
	if files := f.files(key); len(files) != 0 {
		t.Errorf("the key's files are %v, want none", files)
	}
	f.now = time.Time{}
	if got, _ := runMigration(t, true, root, f.b, MigrateOptions{}); got[key].Action != migrate.Migrated {
		t.Fatalf("re-run: %+v, want migrated", got[key])
	}
	f.holds(key, "a", 1)

	// A create whose first try landed, its answer lost, is unsure: past
	// the window at its retry it sends nothing more, and keeps its file,
	// which the record may name (here it does).
	unsure := store.Key("github", "moved", "stalled-unsure")
	root = promotedOnHost(t, unsure, "b")
	const txnMethod = "/etcdserverpb.KV/Txn" // a create is one
	defer f.c.LoseNext(txnMethod, 0, 0)
	start := time.Now()
	faults.Set(func(p faults.Point) error {
		if p == faults.ToEtcdWritten {
			f.c.LoseNext(txnMethod, 0, 1)
			calls := 0
			f.b.now = func() time.Time {
				if calls++; calls > 1 { // after the first try's check
					return start.Add(commitWindow + time.Minute)
				}
				return start
			}
		}
		return nil
	})
	got, _ = runMigration(t, true, root, f.b, MigrateOptions{})
	faults.Set(nil)
	f.b.now = f.clock
	if r := got[unsure]; r.Action != migrate.Failed || !slices.Equal(r.Written, []string{f.recordFile(unsure)}) {
		t.Errorf("the unsure stalled key = %+v, want failed, the file it kept written", r)
	}
	if files := f.files(unsure); !slices.Contains(files, f.recordFile(unsure)) {
		t.Fatalf("the record landed by the lost try names %s; the key's files are %v", f.recordFile(unsure), files)
	}
	f.holds(unsure, "b", 1)
}

// The window runs from when the key's file began to be written, as a
// promotion's does (Stage), not from when its write returned: a
// migration stalled inside the write (its fsync or the directory's on a
// hung file server, a SIGSTOP there) has a file whose mtime a reaper
// already judges, and after 31 minutes sweeps as a dead write's. Here the
// wall clock stands still until the file is there, and is past the
// window from then on; the key was created, naming the file.
func TestMigrateStalledInsideTheWriteCreatesNothing(t *testing.T) {
	f := newFixture(t, etcdtest.Start1(t))
	key := store.Key("github", "moved", "stalled-in-write")
	root := promotedOnHost(t, key, "a")
	start := time.Now()
	f.b.now = func() time.Time {
		if ents, _ := os.ReadDir(filepath.Join(f.dir, key)); len(ents) > 0 {
			return start.Add(commitWindow + time.Minute) // the wall clock after the stall
		}
		return start
	}
	got, _ := runMigration(t, true, root, f.b, MigrateOptions{})
	if r := got[key]; r.Action != migrate.Failed {
		t.Errorf("the key stalled in its write = %+v, want failed", r)
	}
	if st, err := f.b.meta.GetRecord(t.Context(), key); st.Rev != 0 || err != nil {
		t.Fatalf("the key stalled in its write has a record at %d (%v), want none", st.Rev, err)
	}
	if files := f.files(key); len(files) != 0 {
		t.Errorf("the key's files are %v, want none", files)
	}
}

// A create whose first try etcd did not take (unavailable: unsure), and
// whose retry meets a record another writer made meanwhile, did not land:
// that record names another file. The key is a conflict, left alone, its
// file kept for reap (the answer lost, it might have been the record's);
// reported migrated, the key dir's conversation would be taken for the
// fleet's.
func TestMigrateUnsureCreateMeetingAnotherRecordIsAConflict(t *testing.T) {
	// In process: the unsure create is FailNext's, an interceptor fault.
	f := newFixture(t, etcdtest.Start(t, etcdtest.Options{Members: 1, InProcess: true}))
	key := store.Key("github", "moved", "unsure-other")
	root := promotedOnHost(t, key, "host")
	const txnMethod = "/etcdserverpb.KV/Txn" // a create is one
	defer f.c.FailNext(txnMethod, 0, 0)
	faults.Set(func(p faults.Point) error {
		if p == faults.ToEtcdWritten {
			f.run(key, "fleet") // another writer creates the key
			f.c.FailNext(txnMethod, 0, 1)
		}
		return nil
	})
	got, _ := runMigration(t, true, root, f.b, MigrateOptions{})
	faults.Set(nil)
	r := got[key]
	if r.Action != Conflict {
		t.Errorf("the unsure create that met another record = %s (%s), want a conflict", r.Action, r.Cause)
	}
	// The file it kept is in the transcripts dir: the report says so.
	if len(r.Written) != 1 || !strings.HasPrefix(r.Written[0], key+"/") || !slices.Contains(f.files(key), r.Written[0]) || r.Written[0] == f.recordFile(key) {
		t.Errorf("the unsure create that met another record: written %q, the key's files %v; want the file it kept", r.Written, f.files(key))
	}
	f.holds(key, "fleet", 1)
}

// promotedOnHost is a sessions root whose key holds one promotion, of
// marker.
func promotedOnHost(t *testing.T, key, marker string) string {
	t.Helper()
	root := t.TempDir()
	hs, err := store.New(root, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	sess, jobDir := resolveOn(t, hs, key)
	appendMarker(t, jobDir, marker)
	if res, err := hs.Promote(sess, store.PromoteRequest{PiVersion: testJob.PiVersion}); err != nil || !res.Promoted {
		t.Fatalf("promote: %+v, %v", res, err)
	}
	return root
}
