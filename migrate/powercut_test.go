package migrate

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"sessdb/db"
	"sessdb/internal/durable/dbseam"
	"sessdb/internal/durable/powercut"
	"sessdb/internal/faults"
	"sessdb/internal/fsat"
	"sessdb/store"
)

// The power cuts here go through the one journal of package powercut:
// every write migrate makes itself (see Options.disk) is recorded, and
// Images builds the disks a reboot could find, one per cut mode.

// powerCutProfiles are the jobs the verdicts are compared for: a job
// that matches the plain key under every bound (so the chain, context,
// TTL and age rungs are all in play), one from another venue, and one with
// no bound at all.
func powerCutProfiles() []profile {
	var out []profile
	for _, p := range profiles() {
		switch p.name {
		case `all bounds venue="local" pi="0.80.7" model="anthropic/claude-x"`,
			`all bounds venue="podman" pi="0.80.7" model="anthropic/claude-x"`,
			`unbounded venue="local" pi="0.80.7" model="anthropic/claude-x"`,
			"chain 1", "context":
			out = append(out, p)
		}
	}
	return out
}

// cutBed is one direction's power-cut run over one corpus key: its crash
// bed, the fault calls of a clean run, and the verdicts before.
type cutBed struct {
	*crashBed
	toLegacy bool
	// overLegacy starts ToLegacy from the legacy corpus tree rather than
	// from ToDB's: a key there with a meta.db and legacy files beside it
	// has its legacy files renamed over and removed.
	overLegacy bool
	refOver    map[string]string // a clean ToLegacy of the legacy tree
	points     []faults.Point
	settled    []string // keys whose verdicts must not change
	profiles   []profile
	before     map[string]string
}

func newCutBed(t *testing.T, toLegacy, overLegacy bool, name string) *cutBed {
	b := &cutBed{crashBed: newCrashBedOf(t, name), toLegacy: toLegacy, overLegacy: overLegacy, profiles: powerCutProfiles()}
	if len(b.profiles) != 5 {
		t.Fatalf("powerCutProfiles found %d of its 5 profiles", len(b.profiles))
	}
	if overLegacy {
		root := b.copy(t, b.legacyTree)
		migrate(t, root, true, testOpts())
		b.refOver = treeState(t, root, false, false)
	}
	root, _ := b.begin(t)
	opts := testOpts()
	t.Cleanup(func() { faults.Set(nil) })
	faults.Set(migrateOnly(func(p faults.Point) error { b.points = append(b.points, p); return nil }))
	migrate(t, root, toLegacy, opts)
	faults.Set(nil)
	for _, c := range b.keys {
		if !c.unsettled {
			b.settled = append(b.settled, c.key())
		}
	}
	root, _ = b.begin(t)
	b.before = verdicts(t, root, b.settled, b.profiles)
	return b
}

// begin returns a fresh root to migrate and the tree a clean run leaves.
func (b *cutBed) begin(t *testing.T) (string, map[string]string) {
	if b.overLegacy {
		return b.copy(t, b.legacyTree), b.refOver
	}
	return b.start(t, b.toLegacy)
}

// overLegacyKeys are the crash keys whose legacy tree holds a meta.db.
var overLegacyKeys = []string{"interrupted before commit", "mixed", "pending promotion"}

// TestPowerCutToDB cuts the power at every fault call of ToDB (every
// boundary, each removal) for every key of the crash corpus, and once
// after the run returned, in every cut mode; see cutAt for what is
// checked. Each key runs in a root of its own: a directory fsync covers
// one key dir, so keys cannot shield each other.
func TestPowerCutToDB(t *testing.T) { testPowerCut(t, false) }

// TestPowerCutToLegacy is TestPowerCutToDB for ToLegacy.
func TestPowerCutToLegacy(t *testing.T) { testPowerCut(t, true) }

func testPowerCut(t *testing.T, toLegacy bool) {
	seen := map[faults.Point]int{}
	cuts, imgs, all, keys := 0, 0, 0, 0
	each := func(t *testing.T, overLegacy bool, names []string) {
		for _, name := range names {
			t.Run(strings.ReplaceAll(name, " ", "-"), func(t *testing.T) {
				b := newCutBed(t, toLegacy, overLegacy, name)
				all += len(b.points) + 1
				keys++
				for n := 0; n <= len(b.points); n++ {
					sub := "after-the-run"
					if n < len(b.points) {
						seen[b.points[n]]++
						sub = fmt.Sprintf("%02d-%s", n+1, strings.TrimPrefix(string(b.points[n]), direction(toLegacy)+"/"))
					}
					t.Run(sub, func(t *testing.T) { cuts++; imgs += b.cutAt(t, n) })
				}
			})
		}
	}
	each(t, false, crashKeys)
	if toLegacy {
		t.Run("over-legacy-files", func(t *testing.T) { each(t, true, overLegacyKeys) })
	}
	if cuts < all || all == 0 {
		return // a -run pattern chose some of them
	}
	want := toDBPoints
	if toLegacy {
		want = toLegacyPoints
	}
	for _, p := range want {
		if seen[p] == 0 {
			t.Errorf("the corpus never reaches %s", p)
		}
	}
	t.Logf("%d key runs, %d power cuts (at each of %d fault calls %v, and after each run), %d images checked", keys, cuts, cuts-keys, seen, imgs)
}

// cutAt runs the migration through the journal and cuts the power at the
// nth fault call (0-based; n == len(points): after the run returned).
// After the reboot, in every cut mode:
//
//   - every key is wholly legacy or wholly db: the values the migration's
//     own rule reads (a meta.db with a record, else the legacy files) are
//     the values before the migration, none lost;
//   - the store reads every meta.db (no meta-unreadable), and Resolve
//     gives each settled key the verdict it had before, for every profile;
//   - every key reported before the cut is as a clean run leaves it: what
//     a run reported done is durable;
//   - a re-run completes (no key failed), and leaves the clean run's tree
//     and values, and so does a power cut right after it returned.
func (b *cutBed) cutAt(t *testing.T, n int) int {
	root, ref := b.begin(t)
	var (
		mu       sync.Mutex
		reported = map[string]Action{}
		calls    int // the worker's alone until done
		cutNow   = make(chan struct{})
		resume   = make(chan struct{})
		done     = make(chan error, 1)
	)
	opts := testOpts()
	opts.disk = armDB(t, powercut.New())
	t.Cleanup(func() { faults.Set(nil) })
	faults.Set(migrateOnly(func(faults.Point) error {
		calls++
		if calls == n+1 {
			cutNow <- struct{}{} // the test takes the images while this waits
			<-resume
		}
		if calls > n {
			return errInjected // the power is off: nothing more reaches the disk
		}
		return nil
	}))
	run := ToDB
	if b.toLegacy {
		run = ToLegacy
	}
	go func() {
		_, err := run(root, opts, func(r Report) error {
			mu.Lock()
			defer mu.Unlock()
			if r.Action != Failed {
				reported[r.Key] = r.Action
			}
			return nil
		})
		done <- err
	}()
	var release sync.Once
	finished := false
	defer func() { // on a t.Fatal too: the run must not outlive its temp dirs
		release.Do(func() { close(resume) })
		if !finished {
			<-done
		}
	}()
	var err error
	select {
	case <-cutNow:
	case err = <-done:
		finished = true
		if n != len(b.points) {
			t.Fatalf("the run ended after %d fault calls, before call %d (%v)", calls, n+1, err)
		}
	}
	mu.Lock()
	atCut := maps.Clone(reported)
	mu.Unlock()
	images := opts.disk.(*powercut.Journal).Images(t, filepath.Dir(root))
	release.Do(func() { close(resume) })
	if !finished {
		err, finished = <-done, true
	}
	faults.Set(nil) // the power is back: the checks and re-runs below run whole
	if err != nil {
		t.Fatal(err)
	}
	for _, im := range images {
		t.Run(im.Mode, func(t *testing.T) {
			what := fmt.Sprintf("power cut at fault call %d (%s), %s, lost %v", n+1, b.pointName(n), im.Mode, im.Lost)
			b.checkImage(t, sessionsIn(im), ref, atCut, what)
		})
	}
	return len(images)
}

// armDB makes package db's writes (meta.db's creation, a hard-linked
// meta.db's copy) through j too, as the migration's own, until the test
// ends: the cut takes back what those fsyncs would lose.
func armDB(t *testing.T, j *powercut.Journal) *powercut.Journal {
	dbseam.Set(j)
	t.Cleanup(func() { dbseam.Set(nil) })
	return j
}

func (b *cutBed) pointName(n int) string {
	if n < len(b.points) {
		return string(b.points[n])
	}
	return "after the run"
}

// checkImage checks the disk a reboot finds (see cutAt).
func (b *cutBed) checkImage(t *testing.T, root string, ref map[string]string, reported map[string]Action, what string) {
	t.Helper()
	// Wholly legacy or wholly db, and no value lost.
	b.checkValues(t, root, what)

	// The store: every meta.db readable, the same verdicts for every job.
	st, err := store.New(root, store.Options{Now: func() time.Time { return testNow }})
	must(t, err)
	keyed := map[string]bool{}
	for _, c := range b.keys {
		keyed[c.key()] = true
	}
	must(t, st.Inspect(0, func(r store.KeyReport) error {
		if keyed[r.Name] && (r.Problem != "" || r.MetaError != "") {
			t.Errorf("%s: the store finds %s: %s%s", what, r.Name, r.Problem, r.MetaError)
		}
		return nil
	}))
	after := verdicts(t, root, b.settled, b.profiles)
	bad := 0
	for k, v := range b.before {
		if after[k] != v {
			if bad++; bad <= 5 {
				t.Errorf("%s: %s resolves %s, was %s", what, k, after[k], v)
			}
		}
	}

	// What was reported done is durable.
	got := treeState(t, root, false, false)
	for k, a := range reported {
		if d := diffStates(subtree(ref, k), subtree(got, k)); d != "" {
			t.Errorf("%s: %s was reported %s before the cut, and is not as a clean run leaves it:\n%s", what, k, a, d)
		}
	}
	if t.Failed() {
		t.FailNow()
	}

	// A re-run completes and converges, durably.
	j := armDB(t, powercut.New())
	opts := testOpts()
	opts.disk = j
	_, sum := migrate(t, root, b.toLegacy, opts)
	if sum.Failed != 0 {
		t.Fatalf("%s: re-run failed: %+v", what, sum)
	}
	// The re-run's own writes, cut right after it returned, in every mode.
	type image struct {
		mode, root string
		lost       []string
	}
	afterRerun := []image{{mode: "no power cut", root: root}}
	for _, im := range j.Images(t, filepath.Dir(root)) {
		afterRerun = append(afterRerun, image{im.Mode, sessionsIn(im), im.Lost})
	}
	for _, im := range afterRerun {
		got := treeState(t, im.root, false, false)
		for p := range got {
			if strings.HasPrefix(filepath.Base(p), db.TempPrefix) {
				delete(got, p) // db's debris of a creation cut short; see crashBed.check
			}
		}
		rerun := "re-run"
		if im.root != root {
			rerun = fmt.Sprintf("re-run, then a power cut (%s, lost %v)", im.mode, im.lost)
		}
		if d := diffStates(ref, got); d != "" {
			t.Fatalf("%s: %s: the key is not as a clean run leaves it:\n%s", what, rerun, d)
		}
		b.checkValues(t, im.root, what+", "+rerun)
	}
}

// checkValues asserts that every key's values are the values before the
// migration, and says which half holds them.
func (b *cutBed) checkValues(t *testing.T, root, what string) {
	t.Helper()
	now := effectiveValues(t, root)
	for k, v := range b.values {
		if now[k] != v {
			half := "the legacy files"
			if sc, ok := dbValues(t, filepath.Join(root, k)); ok && sc != (db.Sidecars{}) {
				half = "meta.db"
			}
			t.Errorf("%s: %s holds, in %s,\n\t%s\nwant\n\t%s", what, k, half, now[k], v)
		}
	}
}

// sessionsIn is the sessions root in a power-cut image of its parent.
func sessionsIn(im powercut.Image) string { return filepath.Join(im.Dir, "sessions") }

// subtree is the part of a tree state under the key dir k.
func subtree(s map[string]string, k string) map[string]string {
	out := map[string]string{}
	for p, v := range s {
		if p == k || strings.HasPrefix(p, k+string(filepath.Separator)) {
			out[p] = v
		}
	}
	return out
}

// TestPowerCutJournal checks the journal itself: what each cut mode takes
// back, and what an fsync makes stay.
func TestPowerCutJournal(t *testing.T) {
	parent := t.TempDir()
	dirPath := filepath.Join(parent, "sessions", "k")
	must(t, os.MkdirAll(dirPath, 0o700))
	m0, m1 := testNow.Add(-time.Hour), testNow
	lay := map[string]ent{"old": file("old"), "victim": link("x"), "fifo": fifo, "emptydir": dir,
		"current.jsonl": {kind: 'f', data: "t\n", mtime: m0}}
	layKeyDir(t, dirPath, lay)
	d, err := fsat.OpenDir(dirPath)
	must(t, err)
	defer d.Close()
	j := powercut.New()
	write := func(name, data string, sync bool) {
		f, err := j.CreateTemp(d, name)
		must(t, err)
		defer f.Close()
		_, err = f.WriteString(data)
		must(t, err)
		if sync {
			must(t, j.SyncFile(f))
		}
	}
	write("a.tmp", "AAAA", true)
	f, err := os.OpenFile(filepath.Join(dirPath, "a.tmp"), os.O_WRONLY|os.O_APPEND, 0)
	must(t, err)
	_, err = f.WriteString("BB") // after the fsync: lost
	must(t, err)
	f.Close()
	must(t, j.Rename(d, "a.tmp", "old"))
	for _, n := range []string{"victim", "fifo", "emptydir", "nothing-there"} {
		must(t, j.Remove(d, n))
	}
	tr, err := os.Open(filepath.Join(dirPath, "current.jsonl"))
	must(t, err)
	defer tr.Close()
	must(t, j.SetMtime(d, "current.jsonl", tr, m1))
	write("b.tmp", "B", false)

	// describe is what a reboot finds in the key dir of an image.
	describe := func(root string) string {
		st := treeState(t, root, false, false)
		var out []string
		for p, v := range st {
			if p != "k" && p != "." {
				out = append(out, strings.TrimPrefix(p, "k/")+": "+strings.Fields(v)[0]+" "+short(t, filepath.Join(root, p), v))
			}
		}
		slices.Sort(out)
		return strings.Join(out, "; ")
	}
	mt := func(at time.Time) string { return fmt.Sprint(at.UnixNano()) }
	img := func(want map[string]string) {
		t.Helper()
		ims := j.Images(t, parent)
		got := map[string]string{}
		for _, im := range ims {
			got[im.Mode] = describe(sessionsIn(im))
		}
		for mode, w := range want {
			if got[mode] != w {
				t.Errorf("%s:\n\tgot  %s\n\twant %s", mode, got[mode], w)
			}
		}
		if len(got) != len(want) {
			t.Errorf("modes %v, want %d of them", slices.Sorted(maps.Keys(got)), len(want))
		}
	}
	lost := "current.jsonl: regular " + mt(m0) + "; emptydir: directory ; fifo: FIFO ; old: regular old; victim: symbolic x"
	img(map[string]string{
		"nothing-lands":  lost,
		"unlinks-land":   "current.jsonl: regular " + mt(m0) + "; old: regular old",
		"names-land":     "b.tmp: regular ; current.jsonl: regular " + mt(m0) + "; emptydir: directory ; fifo: FIFO ; old: regular AAAA; victim: symbolic x",
		"all-names-land": "b.tmp: regular ; current.jsonl: regular " + mt(m0) + "; old: regular AAAA",
	})
	// The directory fsync makes every name stay; data and the mtime not
	// fsynced are still lost.
	must(t, j.SyncDir(d))
	img(map[string]string{"nothing-lands": "b.tmp: regular ; current.jsonl: regular " + mt(m0) + "; old: regular AAAA"})
	must(t, j.SyncFile(tr))
	img(map[string]string{"nothing-lands": "b.tmp: regular ; current.jsonl: regular " + mt(m1) + "; old: regular AAAA"})
}

// short is a file's bytes, a link's target or a transcript's mtime, for
// TestPowerCutJournal.
func short(t *testing.T, path, desc string) string {
	switch {
	case filepath.Base(path) == "current.jsonl":
		return desc[strings.LastIndex(desc, " ")+1:]
	case strings.HasPrefix(desc, "regular"):
		b, err := os.ReadFile(path)
		must(t, err)
		return string(b)
	case strings.HasPrefix(desc, "symbolic"):
		l, err := os.Readlink(path)
		must(t, err)
		return l
	}
	return ""
}
