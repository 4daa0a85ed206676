package migrate

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"sessdb/db"
	"sessdb/internal/fsat"
	"sessdb/store"
)

// powerCut is a durability journal for the writes migrate makes itself
// (see durability). Every call goes to disk as usual; the journal records
// what a power failure could still take back, and image() builds the disk
// a reboot would find:
//
//   - file data written since the file's last fsync (a file created through
//     the journal keeps only what it had at its last fsync, nothing if it
//     was never fsynced);
//   - an mtime set since the file's last fsync (it goes back);
//   - creates, renames and unlinks in a directory since that directory's
//     last fsync: a create vanishes, a rename goes back (and what it
//     replaced comes back), an unlinked entry reappears, so the journal
//     keeps the bytes (a link's target, a FIFO's or an empty directory's
//     mode) of everything it unlinks or renames over.
//
// Which of a directory's un-fsynced operations a power cut loses is not
// ordered by anything but an fsync, so image() offers several outcomes
// (cutModes). Writes that do not pass through the seam (bbolt's, package
// db's creation of meta.db, the store's roll-forward) are durable by their
// own protocols and are taken as they are at the instant of the cut.
type powerCut struct {
	mu     sync.Mutex
	synced map[string]int64         // files created here: path -> size at the last fsync; -1 never
	mtimes map[string]unix.Timespec // path -> mtime before a setMtime not yet fsynced
	ops    []dirOp                  // not yet durable, oldest first
}

type opKind int

const (
	opCreate opKind = iota
	opRename
	opUnlink
)

func (k opKind) String() string { return [...]string{"create", "rename", "unlink"}[k] }

// dirOp is a directory operation a power cut may undo.
type dirOp struct {
	kind opKind
	dir  string // the directory whose fsync makes it durable
	path string // create, unlink: the name; rename: the destination
	from string // rename: the source
	prev *kept  // rename: what it replaced (nil: nothing); unlink: what it removed
}

// kept is an entry the journal can put back: its type and permissions,
// the bytes of a regular file or a link's target, and its mtime.
type kept struct {
	mode  uint32
	data  []byte
	mtime unix.Timespec
}

func newPowerCut() *powerCut {
	return &powerCut{synced: map[string]int64{}, mtimes: map[string]unix.Timespec{}}
}

// capture keeps what is at path; nil when nothing is.
func capture(path string) (*kept, error) {
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		if err == unix.ENOENT {
			return nil, nil
		}
		return nil, &os.PathError{Op: "lstat", Path: path, Err: err}
	}
	k := &kept{mode: st.Mode, mtime: st.Mtim}
	var err error
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		k.data, err = os.ReadFile(path)
	case unix.S_IFLNK:
		var to string
		to, err = os.Readlink(path)
		k.data = []byte(to)
	case unix.S_IFIFO, unix.S_IFDIR: // only an empty directory is ever removed
	default:
		err = fmt.Errorf("%s: the power-cut journal cannot keep a %s", path, kindOf(&st))
	}
	if err != nil {
		return nil, err
	}
	return k, nil
}

// restore puts k back at path.
func (k *kept) restore(path string) error {
	perm := k.mode & 0o7777
	var err error
	switch k.mode & unix.S_IFMT {
	case unix.S_IFREG:
		if err = os.WriteFile(path, k.data, 0o600); err == nil {
			err = os.Chmod(path, os.FileMode(perm))
		}
	case unix.S_IFLNK:
		err = os.Symlink(string(k.data), path)
	case unix.S_IFIFO:
		err = unix.Mkfifo(path, perm)
	case unix.S_IFDIR:
		return os.Mkdir(path, os.FileMode(perm))
	}
	if err != nil {
		return err
	}
	return setTimes(path, k.mtime)
}

func setTimes(path string, mtime unix.Timespec) error {
	ts := []unix.Timespec{{Nsec: unix.UTIME_OMIT}, mtime}
	return unix.UtimesNanoAt(unix.AT_FDCWD, path, ts, unix.AT_SYMLINK_NOFOLLOW)
}

func (p *powerCut) createTemp(dir *os.File, name string) (*os.File, error) {
	f, err := diskWrites{}.createTemp(dir, name)
	if err == nil {
		p.mu.Lock()
		p.synced[f.Name()] = -1
		p.ops = append(p.ops, dirOp{kind: opCreate, dir: dir.Name(), path: f.Name()})
		p.mu.Unlock()
	}
	return f, err
}

func (p *powerCut) syncFile(f *os.File) error {
	if err := (diskWrites{}).syncFile(f); err != nil {
		return err
	}
	st, err := fsat.Fstat(f)
	if err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.synced[f.Name()]; ok {
		p.synced[f.Name()] = st.Size
	}
	delete(p.mtimes, f.Name())
	return nil
}

func (p *powerCut) setMtime(f *os.File, at time.Time) error {
	st, err := fsat.Fstat(f)
	if err != nil {
		return err
	}
	if err := (diskWrites{}).setMtime(f, at); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.mtimes[f.Name()]; !ok {
		p.mtimes[f.Name()] = st.Mtim
	}
	return nil
}

func (p *powerCut) rename(dir *os.File, from, to string) error {
	fromPath, toPath := fsat.Join(dir, from), fsat.Join(dir, to)
	prev, err := capture(toPath)
	if err != nil {
		return err
	}
	if err := (diskWrites{}).rename(dir, from, to); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if prev != nil {
		p.trim(toPath, prev)
	}
	p.ops = append(p.ops, dirOp{kind: opRename, dir: dir.Name(), path: toPath, from: fromPath, prev: prev})
	delete(p.synced, toPath)
	delete(p.mtimes, toPath)
	if n, ok := p.synced[fromPath]; ok {
		delete(p.synced, fromPath)
		p.synced[toPath] = n
	}
	if m, ok := p.mtimes[fromPath]; ok {
		delete(p.mtimes, fromPath)
		p.mtimes[toPath] = m
	}
	return nil
}

func (p *powerCut) remove(dir *os.File, name string) error {
	path := fsat.Join(dir, name)
	prev, err := capture(path)
	if err != nil {
		return err
	}
	if err := (diskWrites{}).remove(dir, name); err != nil {
		return err
	}
	if prev == nil {
		return nil // nothing was there: no operation
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.trim(path, prev)
	p.ops = append(p.ops, dirOp{kind: opUnlink, dir: dir.Name(), path: path, prev: prev})
	delete(p.synced, path)
	delete(p.mtimes, path)
	return nil
}

// trim makes a kept copy of what was at path what a power cut leaves of
// it: a file created through the journal has only its fsynced bytes, and
// an mtime not yet fsynced is the one before.
func (p *powerCut) trim(path string, k *kept) {
	if n, ok := p.synced[path]; ok && int64(len(k.data)) > max(n, 0) {
		k.data = k.data[:max(n, 0)]
	}
	if m, ok := p.mtimes[path]; ok {
		k.mtime = m
	}
}

func (p *powerCut) syncDir(dir *os.File) error {
	if err := (diskWrites{}).syncDir(dir); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ops = slices.DeleteFunc(p.ops, func(o dirOp) bool { return o.dir == dir.Name() })
	return nil
}

// A cutMode says which of the operations not yet made durable by a
// directory fsync still reach the disk: an fsync is the only order a
// power cut respects, so any of them may land or not, each on its own.
type cutMode struct {
	name string
	land func(dirOp) bool
}

var cutModes = []cutMode{
	// The plain power cut: nothing since the last directory fsync landed.
	{"nothing-lands", func(dirOp) bool { return false }},
	// The removals reached the disk, what they were to follow did not:
	// catches a removal not fenced off by a directory fsync.
	{"unlinks-land", func(o dirOp) bool { return o.kind == opUnlink }},
	// The new names reached the disk, the removals did not.
	{"names-land", func(o dirOp) bool { return o.kind != opUnlink }},
	// Every name landed, the data not fsynced did not: a file renamed
	// into place without its own fsync is there, empty.
	{"all-names-land", func(dirOp) bool { return true }},
}

// cutImage is the disk a reboot finds after a power cut in one mode.
type cutImage struct {
	mode string
	root string // the sessions root in the image
	lost []string
}

// images copies the tree under parent (the sessions root's parent) once
// for each mode that gives a different outcome and takes back from each
// copy what that power cut loses. It is called at the instant of the cut,
// with the migration held still: what it does afterwards is not in the
// images.
func (p *powerCut) images(t *testing.T, parent string) []cutImage {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []cutImage
	var unsynced []string // what every mode loses: data and mtimes not fsynced
	for path, n := range p.synced {
		var st unix.Stat_t
		if unix.Lstat(path, &st) == nil && st.Size > max(n, 0) {
			unsynced = append(unsynced, fmt.Sprintf("data of %s (%d of %d bytes kept)", filepath.Base(path), max(n, 0), st.Size))
		}
	}
	for path := range p.mtimes {
		unsynced = append(unsynced, "mtime of "+filepath.Base(path))
	}
	slices.Sort(unsynced)
	seen := map[string]bool{}
	for _, m := range cutModes {
		lost := slices.Clone(unsynced)
		sig := ""
		for i, o := range p.ops {
			if !m.land(o) {
				lost = append(lost, o.kind.String()+" "+filepath.Base(o.path))
				sig += fmt.Sprint(i, ",")
			}
		}
		if seen[sig] {
			continue
		}
		seen[sig] = true
		img := t.TempDir()
		copyTree(t, parent, img)
		if err := p.apply(parent, img, m); err != nil {
			t.Fatalf("%s: %v", m.name, err)
		}
		out = append(out, cutImage{m.name, filepath.Join(img, "sessions"), lost})
	}
	return out
}

// apply takes back from img, a copy of parent, what the power cut m loses.
func (p *powerCut) apply(parent, img string, m cutMode) error {
	in := func(path string) (string, error) {
		rel, err := filepath.Rel(parent, path)
		if err != nil || strings.HasPrefix(rel, "..") {
			return "", fmt.Errorf("%s is outside %s", path, parent)
		}
		return filepath.Join(img, rel), nil
	}
	// Data not fsynced is gone.
	for path, n := range p.synced {
		q, err := in(path)
		if err != nil {
			return err
		}
		var st unix.Stat_t
		if unix.Lstat(q, &st) == nil && fsat.IsRegular(&st) && st.Size > max(n, 0) {
			if err := os.Truncate(q, max(n, 0)); err != nil {
				return err
			}
		}
	}
	// So is an mtime set since the file's last fsync.
	for path, mt := range p.mtimes {
		q, err := in(path)
		if err != nil {
			return err
		}
		if err := setTimes(q, mt); err != nil && !errors.Is(err, unix.ENOENT) {
			return err
		}
	}
	// Directory operations that did not land are undone, newest first.
	for i := len(p.ops) - 1; i >= 0; i-- {
		o := p.ops[i]
		if m.land(o) {
			continue
		}
		q, err := in(o.path)
		if err != nil {
			return err
		}
		switch o.kind {
		case opCreate:
			if err := os.Remove(q); err != nil && !errors.Is(err, unix.ENOENT) {
				return err
			}
		case opRename:
			from, err := in(o.from)
			if err != nil {
				return err
			}
			if err := os.Rename(q, from); err != nil {
				return err
			}
			if o.prev != nil {
				if err := o.prev.restore(q); err != nil {
					return err
				}
			}
		case opUnlink:
			// A later operation that landed put something else at the
			// name (a temp made again, a rename over it): the name's
			// newest state is the one on disk.
			var st unix.Stat_t
			if unix.Lstat(q, &st) == nil {
				continue
			}
			if err := o.prev.restore(q); err != nil {
				return err
			}
		}
	}
	return nil
}

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
	points     []FaultPoint
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
	opts.Fault = func(p FaultPoint) error { b.points = append(b.points, p); return nil }
	migrate(t, root, toLegacy, opts)
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
	seen := map[FaultPoint]int{}
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
	opts.disk = newPowerCut()
	opts.Fault = func(FaultPoint) error {
		calls++
		if calls == n+1 {
			cutNow <- struct{}{} // the test takes the images while this waits
			<-resume
		}
		if calls > n {
			return errInjected // the power is off: nothing more reaches the disk
		}
		return nil
	}
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
	images := opts.disk.(*powerCut).images(t, filepath.Dir(root))
	release.Do(func() { close(resume) })
	if !finished {
		err, finished = <-done, true
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, im := range images {
		t.Run(im.mode, func(t *testing.T) {
			what := fmt.Sprintf("power cut at fault call %d (%s), %s, lost %v", n+1, b.pointName(n), im.mode, im.lost)
			b.checkImage(t, im.root, ref, atCut, what)
		})
	}
	return len(images)
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
	j := newPowerCut()
	opts := testOpts()
	opts.disk = j
	_, sum := migrate(t, root, b.toLegacy, opts)
	if sum.Failed != 0 {
		t.Fatalf("%s: re-run failed: %+v", what, sum)
	}
	// The re-run's own writes, cut right after it returned, in every mode.
	afterRerun := []cutImage{{mode: "no power cut", root: root}}
	afterRerun = append(afterRerun, j.images(t, filepath.Dir(root))...)
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
	j := newPowerCut()
	write := func(name, data string, sync bool) {
		f, err := j.createTemp(d, name)
		must(t, err)
		defer f.Close()
		_, err = f.WriteString(data)
		must(t, err)
		if sync {
			must(t, j.syncFile(f))
		}
	}
	write("a.tmp", "AAAA", true)
	f, err := os.OpenFile(filepath.Join(dirPath, "a.tmp"), os.O_WRONLY|os.O_APPEND, 0)
	must(t, err)
	_, err = f.WriteString("BB") // after the fsync: lost
	must(t, err)
	f.Close()
	must(t, j.rename(d, "a.tmp", "old"))
	for _, n := range []string{"victim", "fifo", "emptydir", "nothing-there"} {
		must(t, j.remove(d, n))
	}
	tr, err := os.Open(filepath.Join(dirPath, "current.jsonl"))
	must(t, err)
	defer tr.Close()
	must(t, j.setMtime(tr, m1))
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
		ims := j.images(t, parent)
		got := map[string]string{}
		for _, im := range ims {
			got[im.mode] = describe(im.root)
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
	must(t, j.syncDir(d))
	img(map[string]string{"nothing-lands": "b.tmp: regular ; current.jsonl: regular " + mt(m0) + "; old: regular AAAA"})
	must(t, j.syncFile(tr))
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
