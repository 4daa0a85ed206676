package store

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"sessdb/db"
	"sessdb/gates"
	"sessdb/internal/durable/dbseam"
	"sessdb/internal/durable/powercut"
	"sessdb/internal/faults"
	"sessdb/store/legacy"
)

// The power cuts of the protocols that remove or move what a key holds:
// reap, check --repair and --quarantine (TestReapInterruptedAtEachPoint
// and TestRepairInterruptedAtEachPoint kill them; a kill keeps the page
// cache). Their writes go through the journal, and the disk is imaged in
// every mode of powercut at each of their fault points and before every
// write through the seam, and once more after the run returns.

// stepCuts is the journal, imaging the disk at each step of the run.
type stepCuts struct {
	*powercut.Journal
	t      *testing.T
	root   string
	images []cutImage
	seen   map[string]bool // the sums of the disks imaged
	steps  []string        // every cut, in order
}

// through fails t unless c cut before a write whose step starts with each
// of want: one that bypassed the seam is never taken back by a cut.
func (c *stepCuts) through(t *testing.T, want ...string) {
	t.Helper()
	for _, w := range want {
		if !slices.ContainsFunc(c.steps, func(s string) bool { return strings.HasPrefix(s, w) }) {
			t.Errorf("no write %q went through the durability seam: a power cut could not take it back", w)
		}
	}
}

// cutImage is a disk after a cut: where it was cut, and the image.
type cutImage struct {
	at string
	powercut.Image
}

// cut images the disk now, in every mode; a disk an earlier cut already
// left is checked once (most steps change one name, in one mode).
func (c *stepCuts) cut(at string) {
	c.t.Helper()
	if at == afterReturn {
		// The last cut: the checks that follow write in the images
		// (a lock-only meta.db, a roll-forward), which are not the run's.
		defer dbseam.Set(nil)
	}
	c.steps = append(c.steps, at)
	if c.seen == nil {
		c.seen = map[string]bool{}
	}
	// The run's workers cut too, off the test's goroutine, where a Fatal
	// would hang the walk: a cut that fails fails the test, and the run
	// goes on.
	defer func() {
		if r := recover(); r != nil && r != errCutFailed {
			panic(r)
		}
	}()
	for _, img := range c.Images(goTB{c.t}, c.root) {
		if sum := treeSum(goTB{c.t}, img.Dir); !c.seen[sum] || at == afterReturn {
			c.seen[sum] = true
			c.images = append(c.images, cutImage{at, img})
		}
	}
}

// goTB is t for a goroutine other than the test's: Fatal marks the test
// failed and unwinds to the cut.
type goTB struct{ *testing.T }

var errCutFailed = errors.New("the cut failed")

func (g goTB) Fatal(args ...any) {
	g.Error(args...)
	panic(errCutFailed)
}

func (g goTB) Fatalf(format string, args ...any) {
	g.Errorf(format, args...)
	panic(errCutFailed)
}

// afterReturn is the cut after the run returned: what it reported is
// durable by then.
const afterReturn = "after the run returned"

// treeSum sums the tree under dir: each entry's name, type, permissions
// and bytes (a link's target), in walk order.
func treeSum(t testing.TB, dir string) string {
	t.Helper()
	h := sha256.New()
	err := filepath.WalkDir(dir, func(p string, e os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := e.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		fmt.Fprintf(h, "%s\x00%v\x00", rel, fi.Mode())
		switch {
		case fi.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			h.Write(b)
		case fi.Mode()&os.ModeSymlink != 0:
			l, _ := os.Readlink(p)
			h.Write([]byte(l))
		}
		h.Write([]byte{0})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return string(h.Sum(nil))
}

func (c *stepCuts) Mkdir(dir *os.File, name string, perm uint32) (bool, error) {
	c.cut("before mkdir " + name)
	return c.Journal.Mkdir(dir, name, perm)
}

func (c *stepCuts) Rename(dir *os.File, from, to string) error {
	c.cut("before rename " + from)
	return c.Journal.Rename(dir, from, to)
}

func (c *stepCuts) RenameNoReplace(dir *os.File, from, to string) error {
	c.cut("before rename " + from)
	return c.Journal.RenameNoReplace(dir, from, to)
}

func (c *stepCuts) Remove(dir *os.File, name string) error {
	c.cut("before remove " + filepath.Base(dir.Name()) + "/" + name)
	return c.Journal.Remove(dir, name)
}

func (c *stepCuts) Rmdir(dir *os.File, name string) error {
	c.cut("before rmdir " + filepath.Base(dir.Name()) + "/" + name)
	return c.Journal.Rmdir(dir, name)
}

func (c *stepCuts) SyncDir(dir *os.File) error {
	c.cut("before fsync " + filepath.Base(dir.Name()))
	return c.Journal.SyncDir(dir)
}

// arm routes s's writes, and package db's (meta.db's creation and copy),
// through a stepCuts and cuts at every fault point.
func armCuts(t *testing.T, s *Store, root string) *stepCuts {
	c := &stepCuts{Journal: powercut.New(), t: t, root: root}
	s.disk = diskWrites{c}
	dbseam.Set(c)
	faults.Set(func(p faults.Point) error {
		c.cut("at " + string(p))
		return nil
	})
	t.Cleanup(func() { faults.Set(nil); dbseam.Set(nil) })
	return c
}

// imageStore is a store on a cut's disk, with s's options.
func imageStore(t *testing.T, s *Store, img cutImage) *Store {
	t.Helper()
	s2, err := New(img.Dir, s.opts)
	if err != nil {
		t.Fatal(err)
	}
	return s2
}

// resolvesAs fails t unless key resolves on s as want says: resumed on
// the transcript whose last entry is marker, or cold for reason.
func resolvesAs(t *testing.T, s *Store, key string, resume bool, reason gates.Reason, marker string, where string) {
	t.Helper()
	sess, data := checkDescribed(t, s, s.root, key)
	if sess.Resume != resume || sess.Reason != reason || (resume && markerOf(data, 1) != marker) {
		t.Fatalf("%s: %s resolves {resume %v, %s, %q}, want {resume %v, %s, %q}", where, key, sess.Resume, sess.Reason, markerOf(data, 1), resume, reason, marker)
	}
}

// unnamedLeftovers lists what is under root that is neither a key's own
// file nor named by a finding of check (no repair) on s.
func unnamedLeftovers(t *testing.T, s *Store) []string {
	t.Helper()
	// A finding names an entry by its path, or in its detail (a pending
	// promotion names its temp).
	named, details := map[string]bool{}, map[string]string{}
	for _, f := range checkFindings(t, s, CheckOptions{}) {
		named[f.Path] = true
		k, _, _ := strings.Cut(f.Path, "/")
		details[k] += f.Detail + "\n"
	}
	var out []string
	tops, _ := os.ReadDir(s.root)
	for _, top := range tops {
		if !ValidKey(top.Name()) || !top.IsDir() {
			if !named[top.Name()] {
				out = append(out, top.Name())
			}
			continue
		}
		inner, _ := os.ReadDir(filepath.Join(s.root, top.Name()))
		for _, e := range inner {
			n, p := e.Name(), top.Name()+"/"+e.Name()
			if n == TranscriptName || n == db.FileName || legacy.IsName(n) || named[p] || strings.Contains(details[top.Name()], " "+n+" ") {
				continue
			}
			out = append(out, p)
		}
	}
	return out
}

// dumps fails t unless Inspect on s reports every name under its root,
// and no key dir as unusable.
func dumps(t *testing.T, s *Store, where string) {
	t.Helper()
	var got []string
	err := s.Inspect(0, func(r KeyReport) error {
		if ValidKey(r.Name) && r.Problem != "" {
			t.Fatalf("%s: dump: %s: %s", where, r.Name, r.Problem)
		}
		got = append(got, r.Name)
		return nil
	})
	names, _ := os.ReadDir(s.root)
	if err != nil || len(got) != len(names) {
		t.Fatalf("%s: dump reported %v, %v; the root holds %v", where, got, err, names)
	}
}

// The reaps and repairs below each cut one kind of work, beside a key
// they keep, so that each test stays small.

// TestPowerCutDuringReap: an expired key removed, and a stale temp swept
// from a fresh key.
func TestPowerCutDuringReap(t *testing.T) { powerCutReap(t, "db") }

// TestPowerCutDuringReapOfALegacyKey: an expired legacy key removed, with
// the meta.db made for its lock.
func TestPowerCutDuringReapOfALegacyKey(t *testing.T) { powerCutReap(t, "legacy") }

// TestPowerCutDuringReapRestore: a dir a killed reap left, in which a
// promotion landed since, moved back to its key.
func TestPowerCutDuringReapRestore(t *testing.T) { powerCutReap(t, "back") }

// TestPowerCutDuringReapOfALeftover: a dir a reap killed after its
// transcript's removal left, removed.
func TestPowerCutDuringReapOfALeftover(t *testing.T) { powerCutReap(t, "leftover") }

// TestPowerCutDuringReapOfAnEmptyKeyDir: an empty key dir (a refused
// first promotion's) idle past the TTL, removed by its rmdir; the reap
// reports it removed, so a cut after it returned must not bring it back.
func TestPowerCutDuringReapOfAnEmptyKeyDir(t *testing.T) { powerCutReap(t, "empty") }

// TestPowerCutDuringReapOfADeadKey: a key dir that holds nothing a
// resolve or a promotion could use (a first promotion killed before its
// commit: its empty meta.db and its temp), idle past the TTL, removed
// whole as an expired key is (deadKey).
func TestPowerCutDuringReapOfADeadKey(t *testing.T) { powerCutReap(t, "dead") }

// powerCutReap cuts the power at every step of a reap of one kind of
// work (which: "db", "legacy", "back", "leftover", "empty", "dead") beside a fresh key. On every disk
// a cut leaves: the fresh key resumes as before, the moved-back key
// resumes or is still in the reap-owned dir, and no expired key resumes;
// dump reads every entry, and check names everything out of place; a
// second reap finishes the job, reporting an expired key it finds as
// removed, a reap-owned dir as finished or restored, and failing nothing;
// then only the kept keys are left, with nothing check calls a problem.
// What the reap reported done is still done after a cut once it has
// returned.
func powerCutReap(t *testing.T, which string) {
	s, root, clock := newTestStore(t, gates.Bounds{TTL: opsTTL})
	fresh := Key("github", "a/b", "fresh")
	runJob(t, s, fresh, localJob(), PromoteRequest{}, "fresh")
	kept := []string{fresh}
	var expired, through []string
	back := Key("github", "a/b", "back")
	backAside := ReapedPrefix + back + "-0123456789abcdef"
	switch which {
	case "db":
		expiredKey(t, s, clock, testKey)
		expired = []string{testKey}
		chkOldFile(t, filepath.Join(root, fresh, ".current.jsonl.tmp-00000000000000aa"), clock.now.Add(-2*time.Hour))
		through = []string{"before remove " + fresh + "/.current.jsonl.tmp-00000000000000aa"}
	case "legacy":
		legacyKey := Key("github", "a/b", "legacy")
		old := clock.now.Add(-30 * 24 * time.Hour)
		writeLegacy(t, root, legacyKey, map[string]string{TranscriptName: string(transcriptBytes(old))})
		os.Chtimes(filepath.Join(root, legacyKey, TranscriptName), old, old)
		expired = []string{legacyKey}
	case "back":
		// A reap killed after its reaping entry, a promotion that
		// waited for the lock, and the rename the reap then made.
		expiredKey(t, s, clock, back)
		faults.Set(func(p faults.Point) error {
			if p == faults.ReapBeforeRename {
				return errors.New("killed")
			}
			return nil
		})
		s.Reap(false)
		faults.Set(nil)
		runJob(t, s, back, localJob(), PromoteRequest{}, "back")
		if err := os.Rename(filepath.Join(root, back), filepath.Join(root, backAside)); err != nil {
			t.Fatal(err)
		}
		kept = append(kept, back)
		through = []string{"before rename " + backAside}
	case "leftover":
		expiredKey(t, s, clock, testKey)
		faults.Set(func(p faults.Point) error {
			if p == faults.ReapAfterTranscript {
				return errors.New("killed")
			}
			return nil
		})
		s.Reap(false)
		faults.Set(nil)
		through = []string{"before remove " + ReapedPrefix + testKey, "before remove sessions/" + ReapedPrefix + testKey}
	case "dead":
		// A first promotion killed before its commit: its empty meta.db
		// and its temp, idle past the TTL (deadKey).
		idle := clock.now.Add(-opsTTL - time.Hour)
		kd := deadKeyDir(t, root, nil, idle, idle)
		temp := filepath.Join(kd, tmpPrefix+"00000000000000aa")
		if err := os.WriteFile(temp, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{temp, kd} {
			os.Chtimes(p, idle, idle)
		}
		expired = []string{testKey}
	case "empty":
		empty := Key("github", "a/b", "empty")
		refusedFirstPromotion(t, s, root, empty)
		idle := clock.now.Add(-opsTTL - time.Hour)
		if err := os.Chtimes(filepath.Join(root, empty), idle, idle); err != nil {
			t.Fatal(err)
		}
		through = []string{"before rmdir sessions/" + empty, "before fsync sessions"}
		expired = []string{empty}
	}
	for _, k := range expired {
		if which == "empty" {
			break // one rmdir: never renamed aside
		}
		through = append(through, "before rename "+k, "before remove "+ReapedPrefix+k, "before remove sessions/"+ReapedPrefix+k)
	}

	c := armCuts(t, s, root)
	res, err := s.ReapWith(context.Background(), ReapOptions{Workers: 1})
	faults.Set(nil)
	if t.Failed() {
		t.FailNow()
	}
	if err != nil || len(res.Skipped) != 0 || len(res.Removed) != len(expired) || len(res.Restored) != len(kept)-1 || which == "leftover" && len(res.Finished) != 1 {
		t.Fatalf("the reap cut at = %+v, %v", res, err)
	}
	c.cut(afterReturn)
	c.through(t, through...)

	// A dead key whose reap was cut once its reaping entry was written
	// (meta.db's mtime the cut's) is the next reap's too: that entry's
	// reap judged it idle past the TTL. Before, meta.db's mtime was one
	// of its clocks, and it waited a whole TTL from the cut.
	defer func() { t.Logf("%d disks imaged at %d cuts", len(c.images), len(c.steps)) }()
	for _, img := range c.images {
		where := fmt.Sprintf("cut %s (%s, lost %v)", img.at, img.Mode, img.Lost)
		s2 := imageStore(t, s, img)
		resolvesAs(t, s2, fresh, true, gates.Resumed, "fresh", where)
		_, err := os.Lstat(filepath.Join(img.Dir, backAside))
		backAtAside := err == nil
		if backAtAside {
			resolvesAs(t, s2, back, false, gates.Absent, "", where)
		} else if which == "back" {
			resolvesAs(t, s2, back, true, gates.Resumed, "back", where)
		}
		atKey := map[string]bool{}
		for _, k := range expired {
			sess, _ := checkDescribed(t, s2, img.Dir, k)
			if sess.Resume {
				t.Fatalf("%s: expired %s resumes", where, k)
			}
			_, err := os.Lstat(filepath.Join(img.Dir, k))
			atKey[k] = err == nil
		}
		dumps(t, s2, where)
		if left := unnamedLeftovers(t, s2); len(left) > 0 {
			t.Fatalf("%s: check names none of %v", where, left)
		}
		reaped, _ := filepath.Glob(filepath.Join(img.Dir, ReapedPrefix+"*"))
		if img.at == afterReturn {
			// What the reap reported done stays done.
			for _, f := range checkFindings(t, s2, CheckOptions{}) {
				if f.Severity == SeverityProblem || f.Kind == KindStrayTemp {
					t.Fatalf("%s: the reap returned, and check finds %+v", where, f)
				}
			}
			if len(reaped) > 0 || slices.Contains(slices.Collect(maps.Values(atKey)), true) {
				t.Fatalf("%s: the reap returned, and what it reaped is back (%v, %v)", where, atKey, reaped)
			}
		}

		again, err := s2.ReapWith(context.Background(), ReapOptions{Workers: 1})
		if err != nil || len(again.Skipped) != 0 || len(again.Failed) != 0 {
			t.Fatalf("%s: the next reap = %+v, %v", where, again, err)
		}
		for _, k := range expired {
			if atKey[k] != slices.Contains(again.Removed, k) {
				t.Fatalf("%s: %s at its name %v, the next reap removed %v", where, k, atKey[k], again.Removed)
			}
		}
		restored := 0
		if backAtAside {
			restored = 1
		}
		if len(again.Restored) != restored || len(again.Finished)+restored != len(reaped) {
			t.Fatalf("%s: reap-owned dirs %v, the next reap finished %v, restored %v", where, reaped, again.Finished, again.Restored)
		}
		var left []string
		entries, _ := os.ReadDir(img.Dir)
		for _, e := range entries {
			left = append(left, e.Name())
		}
		if slices.Sort(left); !slices.Equal(left, slices.Sorted(slices.Values(kept))) {
			t.Fatalf("%s: after the next reap the root holds %v, want only %v", where, left, kept)
		}
		for _, f := range checkFindings(t, s2, CheckOptions{}) {
			if f.Severity == SeverityProblem {
				t.Fatalf("%s: after the next reap check finds %+v", where, f)
			}
		}
		where += ", after the next reap"
		resolvesAs(t, s2, fresh, true, gates.Resumed, "fresh", where)
		if which == "back" {
			resolvesAs(t, s2, back, true, gates.Resumed, "back", where)
		}
		dumps(t, s2, where)
	}
}

func fileExists(p string) bool { _, err := os.Lstat(p); return err == nil }

// TestPowerCutDuringRepairMoveAside: a damaged meta.db moved aside.
func TestPowerCutDuringRepairMoveAside(t *testing.T) { powerCutRepair(t, "damaged") }

// TestPowerCutDuringRepairMoveAsideAndTemps: a damaged meta.db moved
// aside, then a stray temp removed under a meta.db made for the lock.
func TestPowerCutDuringRepairMoveAsideAndTemps(t *testing.T) { powerCutRepair(t, "damagedtemps") }

// TestPowerCutDuringRepairRollForward: a pending promotion rolled forward,
// and a stray temp beside it removed.
func TestPowerCutDuringRepairRollForward(t *testing.T) { powerCutRepair(t, "pending") }

// TestPowerCutDuringRepairOfADamagedPendingTemp: a pending promotion whose
// temp no longer matches its record: the temp removed, the record left.
func TestPowerCutDuringRepairOfADamagedPendingTemp(t *testing.T) {
	powerCutRepair(t, "pendingbad")
}

// TestPowerCutDuringRepairTemps: stray temps removed from a key.
func TestPowerCutDuringRepairTemps(t *testing.T) { powerCutRepair(t, "temps") }

// TestPowerCutDuringRepairOfOneTemp: the one stray temp of a key with a
// meta.db, whose removal is made durable by the sweep's own fsync (no
// other write of the repair fsyncs the key dir).
func TestPowerCutDuringRepairOfOneTemp(t *testing.T) { powerCutRepair(t, "onetemp") }

// TestPowerCutDuringRepairTempsOfALegacyKey: a stray temp removed from a
// legacy key, which gets a meta.db for the lock.
func TestPowerCutDuringRepairTempsOfALegacyKey(t *testing.T) { powerCutRepair(t, "legacy") }

// TestPowerCutDuringRepairOfAReapedDir: a dir an interrupted reap left,
// removed.
func TestPowerCutDuringRepairOfAReapedDir(t *testing.T) { powerCutRepair(t, "reaped") }

// powerCutRepair cuts the power at every step of check --repair on a root
// with one kind of damage it repairs (which) beside a healthy key. On
// every disk a cut leaves, each key resolves as it did before the repair
// (a damaged one never resumes, a pending one resumes its committed
// generation), dump reads every entry, check names everything out of
// place, and a second repair finishes the job: after it check finds no
// problem, and each key still resolves as before. What the repair
// reported repaired is still repaired after a cut once it has returned.
func powerCutRepair(t *testing.T, which string) {
	s, root, clock := newTestStore(t, gates.Bounds{TTL: opsTTL})
	healthy := Key("github", "a/b", "healthy")
	runJob(t, s, healthy, localJob(), PromoteRequest{}, "healthy")
	keys := []string{healthy}
	var through []string
	key := Key("github", "a/b", which)
	switch which {
	case "damaged", "damagedtemps":
		runJob(t, s, key, localJob(), PromoteRequest{}, "damaged")
		os.Truncate(chkDB(root, key), 0)
		through = []string{"before rename " + db.FileName}
		if which == "damagedtemps" {
			chkOldFile(t, filepath.Join(root, key, ".current.jsonl.tmp-00000000000000aa"), clock.now.Add(-time.Minute))
			through = append(through, "before remove "+key+"/.current.jsonl.tmp-00000000000000aa", "before remove "+key+"/"+db.FileName)
		}
	case "pending":
		runJob(t, s, key, localJob(), PromoteRequest{}, "before")
		pendingDamage(t, s, root, key)
		chkOldFile(t, filepath.Join(root, key, ".current.jsonl.tmp-00000000000000aa"), clock.now.Add(-time.Minute))
		through = []string{"before rename ." + TranscriptName + ".tmp-", "before remove " + key + "/.current.jsonl.tmp-00000000000000aa"}
	case "pendingbad":
		runJob(t, s, key, localJob(), PromoteRequest{}, "before")
		pendingDamage(t, s, root, key)
		tmp := filepath.Join(root, key, sidecarsOf(t, root, key).Pending.Tmp)
		b, err := os.ReadFile(tmp)
		if err != nil {
			t.Fatal(err)
		}
		b[len(b)/2] ^= 1
		os.WriteFile(tmp, b, 0o600)
		through = []string{"before remove " + key + "/.current.jsonl.tmp-"}
	case "temps":
		runJob(t, s, key, localJob(), PromoteRequest{}, "temps")
		chkOldFile(t, filepath.Join(root, key, ".current.jsonl.tmp-00000000000000aa"), clock.now.Add(-time.Minute))
		chkOldFile(t, filepath.Join(root, key, ".meta.db.tmp-00000000000000bb"), clock.now.Add(-time.Minute))
		through = []string{"before remove " + key + "/.current.jsonl.tmp-00000000000000aa",
			"before remove " + key + "/.meta.db.tmp-00000000000000bb"}
	case "onetemp":
		runJob(t, s, key, localJob(), PromoteRequest{}, "one temp")
		chkOldFile(t, filepath.Join(root, key, ".current.jsonl.tmp-00000000000000dd"), clock.now.Add(-time.Minute))
		through = []string{"before remove " + key + "/.current.jsonl.tmp-00000000000000dd"}
	case "legacy":
		writeLegacy(t, root, key, map[string]string{TranscriptName: string(transcriptBytes(clock.now, entryLine("legacy")))})
		chkOldFile(t, filepath.Join(root, key, ".current.jsonl.tmp-00000000000000cc"), clock.now.Add(-time.Minute))
		through = []string{"before remove " + key + "/.current.jsonl.tmp-00000000000000cc", "before remove " + key + "/" + db.FileName}
	case "reaped":
		expiredKey(t, s, clock, key)
		faults.Set(func(p faults.Point) error {
			if p == faults.ReapAfterRename {
				return errors.New("killed")
			}
			return nil
		})
		s.Reap(false)
		faults.Set(nil)
		through = []string{"before remove sessions/" + ReapedPrefix + key}
	}
	keys = append(keys, key)

	// What a resolve hands over: whether, why, and the bytes. A resumed
	// key must hand over exactly what it did before the repair (the
	// record's transcript, or for a pending promotion whose temp is
	// damaged, the generation before it).
	type resolved struct {
		resume bool
		reason gates.Reason
		data   string
	}
	resolve := func(t *testing.T, s *Store, k string) resolved {
		t.Helper()
		sess, jobDir := mustResolve(t, s, k, localJob())
		r := resolved{sess.Resume, sess.Reason, ""}
		if sess.Resume {
			r.data = string(staged(t, jobDir))
		}
		return r
	}
	before := map[string]resolved{}
	for _, k := range keys {
		before[k] = resolve(t, s, k)
	}
	b := before[key]
	if which == "pending" && (!b.resume || markerOf([]byte(b.data), 1) == "before") ||
		which == "pendingbad" && (!b.resume || markerOf([]byte(b.data), 1) != "before") || strings.HasPrefix(which, "damaged") && b.resume {
		t.Fatalf("the fixture: %+v", before)
	}
	// Moved aside, the damaged key reads as such; that is the one change
	// the repair makes to what a resolve says.
	asideOK := func(k string, got resolved) bool {
		return strings.HasPrefix(which, "damaged") && k == key && got == resolved{false, gates.MetaMovedAside, ""}
	}
	sameAsBefore := func(t *testing.T, s2 *Store, where string) {
		t.Helper()
		for k, b := range before {
			if got := resolve(t, s2, k); got != b && !asideOK(k, got) {
				t.Fatalf("%s: %s resolves {resume %v, %s, %d bytes}, before the repair {resume %v, %s, %d bytes}", where, k, got.resume, got.reason, len(got.data), b.resume, b.reason, len(b.data))
			}
		}
	}

	// A transcript in place that is the generation before a damaged
	// pending one stays a problem by design: nothing repairs it but the
	// next promotion, and a resolve serves it meanwhile.
	problem := func(f Finding) bool {
		return (f.Severity == SeverityProblem || f.Kind == KindStrayTemp) &&
			!(which == "pendingbad" && f.Key == key && f.Kind == KindTranscriptMismatch)
	}

	c := armCuts(t, s, root)
	// One worker: the disk is imaged with no write in flight.
	found := checkFindings(t, s, CheckOptions{Repair: true, Workers: 1})
	faults.Set(nil)
	if t.Failed() {
		t.FailNow()
	}
	for _, f := range found {
		if problem(f) && !f.Repaired {
			t.Fatalf("the repair cut at left %+v", f)
		}
	}
	c.cut(afterReturn)
	c.through(t, through...)

	for _, img := range c.images {
		where := fmt.Sprintf("cut %s (%s, lost %v)", img.at, img.Mode, img.Lost)
		s2 := imageStore(t, s, img)
		sameAsBefore(t, s2, where)
		dumps(t, s2, where)
		if left := unnamedLeftovers(t, s2); len(left) > 0 {
			t.Fatalf("%s: check names none of %v", where, left)
		}
		if img.at == afterReturn {
			// What the repair reported repaired stays repaired.
			for _, f := range checkFindings(t, s2, CheckOptions{}) {
				if problem(f) {
					t.Fatalf("%s: the repair returned, and check finds %+v", where, f)
				}
			}
		}
		for _, f := range checkFindings(t, s2, CheckOptions{Repair: true}) {
			if problem(f) && !f.Repaired {
				t.Fatalf("%s: the next repair left %+v", where, f)
			}
		}
		for _, f := range checkFindings(t, s2, CheckOptions{}) {
			if problem(f) {
				t.Fatalf("%s: after the next repair check finds %+v", where, f)
			}
		}
		where += ", after the next repair"
		sameAsBefore(t, s2, where)
		dumps(t, s2, where)
		if aside, _ := filepath.Glob(filepath.Join(img.Dir, key, AsidePrefix+"*")); strings.HasPrefix(which, "damaged") && len(aside) != 1 {
			t.Fatalf("%s: the damaged meta.db is at %v, want one file aside", where, aside)
		}
		if reaped, _ := filepath.Glob(filepath.Join(img.Dir, ReapedPrefix+"*")); len(reaped) > 0 {
			t.Fatalf("%s: the reap-owned dir is left: %v", where, reaped)
		}
	}
}

// TestPowerCutDuringQuarantine cuts the power at every step of check
// --quarantine's move of a key dir, one with a meta.db and a legacy one
// (which gets a meta.db for the lock). On every disk a cut leaves, each
// key is whole at its name (resolving as before) or whole at its
// quarantine name (absent), never both or neither; check names the
// quarantine dir; a second quarantine of a key still at its name moves
// it. Once Quarantine returned, the move stays.
func TestPowerCutDuringQuarantine(t *testing.T) {
	s, root, clock := newTestStore(t, gates.Bounds{})
	dbKey := Key("github", "a/b", "db")
	runJob(t, s, dbKey, localJob(), PromoteRequest{}, "db")
	legacyKey := Key("github", "a/b", "legacy")
	writeLegacy(t, root, legacyKey, map[string]string{TranscriptName: string(transcriptBytes(clock.now, entryLine("legacy")))})
	transcripts, before := map[string]string{}, map[string]Session{}
	for _, k := range []string{dbKey, legacyKey} {
		transcripts[k] = string(readCanonical(t, root, k))
		before[k], _ = checkDescribed(t, s, root, k)
	}

	c := armCuts(t, s, root)
	for _, k := range []string{dbKey, legacyKey} {
		if _, err := s.Quarantine(k); err != nil {
			t.Fatal(err)
		}
	}
	faults.Set(nil)
	if t.Failed() {
		t.FailNow()
	}
	c.cut(afterReturn)
	c.through(t, "before rename "+dbKey, "before rename "+legacyKey, "before remove "+QuarantinePrefix+legacyKey)

	for _, img := range c.images {
		where := fmt.Sprintf("cut %s (%s, lost %v)", img.at, img.Mode, img.Lost)
		s2 := imageStore(t, s, img)
		dumps(t, s2, where)
		if left := unnamedLeftovers(t, s2); len(left) > 0 {
			t.Fatalf("%s: check names none of %v", where, left)
		}
		for k, b := range before {
			moved, _ := filepath.Glob(filepath.Join(img.Dir, QuarantinePrefix+k+"-*"))
			_, err := os.Lstat(filepath.Join(img.Dir, k))
			if atKey := err == nil; atKey == (len(moved) == 1) || len(moved) > 1 || img.at == afterReturn && atKey {
				t.Fatalf("%s: %s at its name %v, quarantined at %v", where, k, atKey, moved)
			}
			if len(moved) == 1 {
				if b, err := os.ReadFile(filepath.Join(moved[0], TranscriptName)); err != nil || string(b) != transcripts[k] {
					t.Fatalf("%s: %s's transcript in %s: %v", where, k, moved[0], err)
				}
				resolvesAs(t, s2, k, false, gates.Absent, "", where)
				continue
			}
			if got, _ := checkDescribed(t, s2, img.Dir, k); got.Resume != b.Resume || got.Reason != b.Reason {
				t.Fatalf("%s: %s resolves {resume %v, %s}, before {resume %v, %s}", where, k, got.Resume, got.Reason, b.Resume, b.Reason)
			}
			if _, err := s2.Quarantine(k); err != nil {
				t.Fatalf("%s: the next quarantine of %s: %v", where, k, err)
			}
			resolvesAs(t, s2, k, false, gates.Absent, "", where+", after the next quarantine")
		}
	}
}
