package fleet

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"golang.org/x/sys/unix"

	"sessdb/fleet/etcdmeta"
	"sessdb/fleet/internal/sharedfs"
	"sessdb/fleet/shared"
	"sessdb/gates"
	"sessdb/internal/durable/powercut"
	"sessdb/internal/etcdtest"
	"sessdb/internal/faults"
	"sessdb/store"
)

// The power cuts of the fleet's own writes: a promotion (a key's first
// generation and a later one), reap (a key removed, orphans swept), check
// --repair (orphans removed), and migrate --to etcd and --from etcd. The
// writes go through the power-cut journal (package sharedfs's seam), and
// at every write boundary (before and after each write through the seam,
// at each of the Backend's hook points and the write's fault points, and
// once after the run returned) the disk is imaged in every mode the journal
// offers, with etcd's records as they were at that instant: etcd's
// commits are fsynced on a quorum, so a power cut of the writer's host
// takes back only what the transcripts dir (and a sessions root) had not
// made durable. A lock's lease is dropped, as the host's death lets it
// expire. Each image is then "rebooted" and judged from outside: every
// record names a whole file (size and CRC32C); each key resolves whole on
// its record's generation, or absent where it has no record, never a
// torn or missing file as a resume; nothing acknowledged is lost; check
// names every file no record needs, and check --repair, reap or the
// migration run again clean it up and complete.

// cutter is the journal, imaging the fleet at each step of a run.
type cutter struct {
	*powercut.Journal
	t      *testing.T
	cli    *clientv3.Client
	prefix string // the fleet's etcd prefix
	parent string // holds the transcripts dir ("t") and a sessions root ("s")
	points []faults.Point

	restore func() // the seam as it was
	// noAtomic stands in for a filesystem with no atomic no-replace
	// rename (NFS, CephFS: EINVAL), where shared links and unlinks.
	noAtomic bool

	mu    sync.Mutex // a cut and a write are never at once
	cuts  []fleetCut
	seen  map[string]bool
	steps []string
	n     int // images taken, before the ones alike are dropped
}

// fleetCut is the fleet after a cut: where, the disk, and etcd's keys.
type fleetCut struct {
	at string
	powercut.Image
	kvs []*mvccpb.KeyValue
}

const returned = "after the run returned"

// armCutter routes the fleet's writes through a cutter, and cuts at each
// of f's Backend's hook points and at points.
func armCutter(t *testing.T, f *fixture, parent string, points ...faults.Point) *cutter {
	c := &cutter{Journal: powercut.New(), t: t, cli: f.c.Client(t), prefix: f.prefix, parent: parent, points: points, seen: map[string]bool{}}
	c.restore = sharedfs.Use(c)
	f.b.hook = func(p, key string) error {
		c.step("at " + p)
		return nil
	}
	faults.Set(func(p faults.Point) error {
		if slices.Contains(c.points, p) {
			c.step("at " + string(p))
		}
		return nil
	})
	t.Cleanup(func() {
		faults.Set(nil)
		c.restore()
	})
	return c
}

// disarm ends the cuts and takes the last one, after the run: the
// reboots' own writes go to disk as they are.
func (c *cutter) disarm(f *fixture) {
	faults.Set(nil)
	f.b.hook = nil
	c.step(returned)
	c.restore()
}

func (c *cutter) step(at string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cut(at)
}

// cut images the fleet now, in every mode; a fleet an earlier cut
// already left is judged once. c.mu is held.
func (c *cutter) cut(at string) {
	c.t.Helper()
	c.steps = append(c.steps, at)
	resp, err := c.cli.Get(context.Background(), c.prefix+"/", clientv3.WithPrefix())
	if err != nil {
		c.t.Errorf("%s: etcd: %v", at, err)
		return
	}
	var kvs []*mvccpb.KeyValue
	h := sha256.New()
	for _, kv := range resp.Kvs {
		if kv.Lease != 0 {
			continue // a lock: its lease ends with the host
		}
		kvs = append(kvs, kv)
		fmt.Fprintf(h, "%s\x00%x\x00", kv.Key, kv.Value)
	}
	etcdSum := string(h.Sum(nil))
	// The migrations' and check's keys run off the test's goroutine,
	// where a Fatal would hang the run: a cut that fails fails the test,
	// and the run goes on.
	defer func() {
		if r := recover(); r != nil && r != errCutFailed {
			panic(r)
		}
	}()
	for _, img := range c.Images(goTB{c.t}, c.parent) {
		c.n++
		if sum := treeSum(goTB{c.t}, img.Dir) + etcdSum; !c.seen[sum] || at == returned {
			c.seen[sum] = true
			c.cuts = append(c.cuts, fleetCut{at, img, kvs})
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

// The seam's writes, each cut before and after: a cut after one is
// before what follows it, an etcd write too.

func (c *cutter) Mkdir(dir *os.File, name string, perm uint32) (bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	at := "mkdir " + name
	c.cut("before " + at)
	defer c.cut("after " + at)
	return c.Journal.Mkdir(dir, name, perm)
}

func (c *cutter) CreateTemp(dir *os.File, name string) (*os.File, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	at := "create " + name
	c.cut("before " + at)
	defer c.cut("after " + at)
	return c.Journal.CreateTemp(dir, name)
}

func (c *cutter) SyncFile(f *os.File) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	at := "fsync " + filepath.Base(f.Name())
	c.cut("before " + at)
	defer c.cut("after " + at)
	return c.Journal.SyncFile(f)
}

func (c *cutter) Rename(dir *os.File, from, to string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	at := "rename " + from
	c.cut("before " + at)
	defer c.cut("after " + at)
	return c.Journal.Rename(dir, from, to)
}

func (c *cutter) RenameNoReplace(dir *os.File, from, to string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	at := "rename " + from
	c.cut("before " + at)
	defer c.cut("after " + at)
	return c.Journal.RenameNoReplace(dir, from, to)
}

func (c *cutter) RenameNoReplaceAtomic(dir *os.File, from, to string) error {
	if c.noAtomic {
		return &os.LinkError{Op: "rename", Old: from, New: to, Err: unix.EINVAL}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	at := "rename " + from
	c.cut("before " + at)
	defer c.cut("after " + at)
	return c.Journal.RenameNoReplaceAtomic(dir, from, to)
}

func (c *cutter) Link(dir *os.File, from, to string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	at := "link " + from
	c.cut("before " + at)
	defer c.cut("after " + at)
	return c.Journal.Link(dir, from, to)
}

func (c *cutter) Remove(dir *os.File, name string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	at := "remove " + filepath.Base(dir.Name()) + "/" + name
	c.cut("before " + at)
	defer c.cut("after " + at)
	return c.Journal.Remove(dir, name)
}

func (c *cutter) Unlink(dir *os.File, name string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	at := "unlink " + filepath.Base(dir.Name()) + "/" + name
	c.cut("before " + at)
	defer c.cut("after " + at)
	return c.Journal.Unlink(dir, name)
}

func (c *cutter) Rmdir(dir *os.File, name string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	at := "rmdir " + name
	c.cut("before " + at)
	defer c.cut("after " + at)
	return c.Journal.Rmdir(dir, name)
}

func (c *cutter) SyncDir(dir *os.File) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	at := "fsync " + filepath.Base(dir.Name())
	c.cut("before " + at)
	defer c.cut("after " + at)
	return c.Journal.SyncDir(dir)
}

// through fails t unless a cut came before a step that starts with each
// of want: a write that bypassed the seam is never taken back by a cut.
func (c *cutter) through(want ...string) {
	c.t.Helper()
	for _, w := range want {
		if !slices.ContainsFunc(c.steps, func(s string) bool { return strings.HasPrefix(s, w) }) {
			c.t.Errorf("no step %q: a write there did not go through the durability seam (steps: %q)", w, c.steps)
		}
	}
}

// treeSum sums the tree under dir: each entry's name, type and bytes.
func treeSum(t testing.TB, dir string) string {
	t.Helper()
	h := sha256.New()
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		fmt.Fprintf(h, "%s\x00%v\x00", rel, e.Type())
		if e.Type().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			h.Write(b)
		}
		h.Write([]byte{0})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return string(h.Sum(nil))
}

// rebooter brings a cut's fleet back up: etcd's keys put back under a
// prefix of their own, a Backend on the image's transcripts dir.
type rebooter struct {
	t      *testing.T
	cli    *clientv3.Client
	from   string // the fleet's prefix
	prefix string // where the image's keys go
	meta   *etcdmeta.Store
}

func newRebooter(t *testing.T, f *fixture) *rebooter {
	r := &rebooter{t: t, cli: f.c.Client(t), from: f.prefix, prefix: "/sessdb/" + randHex(8)}
	m, err := etcdmeta.Open(etcdmeta.Config{Endpoints: f.c.Endpoints(), Prefix: r.prefix, RequestTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	r.meta = m
	return r
}

// boot puts cut's etcd keys in place of the last image's and returns a
// Backend on its transcripts dir.
func (r *rebooter) boot(cut fleetCut) *Backend {
	r.t.Helper()
	ctx := context.Background()
	if _, err := r.cli.Delete(ctx, r.prefix+"/", clientv3.WithPrefix()); err != nil {
		r.t.Fatal(err)
	}
	for _, kv := range cut.kvs {
		if _, err := r.cli.Put(ctx, r.prefix+strings.TrimPrefix(string(kv.Key), r.from), string(kv.Value)); err != nil {
			r.t.Fatal(err)
		}
	}
	return &Backend{meta: r.meta, dir: filepath.Join(cut.Dir, "t"), timeout: 10 * time.Second, log: zerolog.Nop(), now: time.Now}
}

// later is the clock of a reboot's check and clean-up: every file the
// run left is past the grace and the in-flight window by then.
func later() time.Time { return time.Now().Add(2 * time.Hour) }

// powerFixture is a fixture whose transcripts dir is parent/t.
func powerFixture(t *testing.T) (*fixture, string) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "t")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, c: etcdtest.Start1(t), prefix: "/sessdb/" + randHex(8), dir: dir}
	f.b = f.open()
	f.s = store.NewOn(f.b, store.Options{Now: f.clock, Bounds: gates.Bounds{TTL: 14 * 24 * time.Hour}})
	return f, parent
}

// judge is what a reboot of one cut must find.
type judge struct {
	// markers: each key's generations, by the last entry each holds.
	markers map[string]map[uint64]string
	// least is the generation each key must hold at least at the cut
	// (acknowledged before it); a key not in it may hold nothing.
	least func(at string) map[string]uint64
	// expired are the keys past the TTL: a record of one resolves as a
	// named cold start (expired), and a reap takes it away.
	expired []string
	// gone are the keys that must have no record in the image where
	// names (removed by a run that returned); nil: none.
	gone func(where string) []string
	// clean is the run that cleans up after the cut: check --repair, a
	// reap, the migration again.
	clean func(t *testing.T, cut fleetCut, b *Backend)
	// completes: clean finishes what the cut stopped (a migration run
	// again), and judges the verdicts after it itself; else they must be
	// those before it.
	completes bool
}

// verify reboots each of c's cuts and judges it.
func (c *cutter) verify(t *testing.T, f *fixture, j judge) {
	t.Helper()
	r := newRebooter(t, f)
	was := t.Failed()
	for _, cut := range c.cuts {
		where := fmt.Sprintf("cut %s, %s", cut.at, cut.Mode)
		b := r.boot(cut)
		before := resolves(t, where, b, j, j.least(cut.at))
		leftovers(t, where, b, true)
		j.clean(t, cut, b)
		if n := leftovers(t, where+", cleaned up", b, false); n != 0 {
			t.Errorf("%s: %d left after the clean-up", where, n)
		}
		if after := resolves(t, where+", cleaned up", b, j, nil); !j.completes && !maps.Equal(before, after) {
			t.Errorf("%s: the clean-up changed the verdicts: %v, then %v", where, before, after)
		}
		if t.Failed() && !was {
			// The first image that fails is the one to read.
			t.Logf("%s lost: %v", where, cut.Lost)
			return
		}
	}
	t.Logf("%d steps, %d images (%d judged)", len(c.steps), c.n, len(c.cuts))
}

// resolves judges each key's record and resolve on b and returns the
// verdicts: every record names a whole file; a key with a record resumes
// on it whole, one without is absent; least's generations are held.
func resolves(t *testing.T, where string, b *Backend, j judge, least map[string]uint64) map[string]string {
	t.Helper()
	s := store.NewOn(b, store.Options{Bounds: gates.Bounds{TTL: 14 * 24 * time.Hour}})
	out := map[string]string{}
	for key, gens := range j.markers {
		st, err := b.meta.GetRecord(context.Background(), key)
		if err != nil {
			t.Fatalf("%s: %s: %v", where, key, err)
		}
		tr := st.Record.Transcript
		if tr != nil {
			data, err := os.ReadFile(filepath.Join(b.dir, tr.File))
			if err != nil || int64(len(data)) != tr.Size || uint64(crc32.Checksum(data, castagnoli)) != tr.CRC32C {
				t.Errorf("%s: %s's record names %s (%d bytes, crc32c %08x), which the reboot finds %d bytes (%v): the file was not durable when its record committed", where, key, tr.File, tr.Size, tr.CRC32C, len(data), err)
			}
		}
		if j.gone != nil && slices.Contains(j.gone(where), key) && tr != nil {
			t.Errorf("%s: %s was removed, and its record is back: %+v", where, key, tr)
		}
		sess, jobDir := resolveOn(t, s, key)
		m := markers(stagedOf(t, jobDir))
		switch {
		case tr == nil && (sess.Resume || sess.Reason != gates.Absent):
			t.Errorf("%s: %s has no record, and resolves {resume %v, %s}", where, key, sess.Resume, sess.Reason)
		case tr != nil && slices.Contains(j.expired, key):
			if sess.Resume || sess.Reason != gates.Expired {
				t.Errorf("%s: %s is past the TTL, and resolves {resume %v, %s}", where, key, sess.Resume, sess.Reason)
			}
			continue // reaped by the clean-up: its verdict changes
		case tr != nil && (!sess.Resume || sess.Gen() != tr.Gen || len(m) == 0 || m[len(m)-1] != gens[tr.Gen]):
			t.Errorf("%s: %s's record is gen %d (%q), and it resolves {resume %v, %s, gen %d, %v}: a torn or missing file resolved, or a whole one not", where, key, tr.Gen, gens[tr.Gen], sess.Resume, sess.Reason, sess.Gen(), m)
		}
		if g, ok := least[key]; ok && (tr == nil || tr.Gen < g) {
			t.Errorf("%s: %s holds %v, but gen %d (%q) was acknowledged: lost", where, key, tr, g, gens[g])
		}
		if !slices.Contains(j.expired, key) {
			out[key] = fmt.Sprintf("%v %s %d %v", sess.Resume, sess.Reason, sess.Gen(), m)
		}
	}
	return out
}

// leftovers lists what b's transcripts dir holds that no record names (a
// key's dir with nothing in it too, as "<key>/"), and, if named, fails t
// unless check, which must find nothing else, names each as an orphan. It
// returns how many there are.
func leftovers(t *testing.T, where string, b *Backend, named bool) int {
	t.Helper()
	needed := map[string]bool{}
	err := b.meta.List(context.Background(), func(it etcdmeta.Item) error {
		if tr := it.Record.Transcript; tr != nil {
			needed[tr.File] = true
		}
		return nil
	})
	if err != nil {
		t.Fatalf("%s: %v", where, err)
	}
	var left []string
	keys, _ := os.ReadDir(b.dir)
	for _, k := range keys {
		if k.Name() == shared.MarkName {
			continue
		}
		if strings.HasPrefix(k.Name(), shared.MarkName+".tmp-") {
			// A cut while the dir was first marked: check names it.
			left = append(left, k.Name())
			continue
		}
		files, err := os.ReadDir(filepath.Join(b.dir, k.Name()))
		if err != nil {
			t.Fatalf("%s: %v", where, err)
		}
		if len(files) == 0 {
			left = append(left, k.Name()+"/")
		}
		for _, e := range files {
			if name := k.Name() + "/" + e.Name(); !needed[name] {
				left = append(left, name)
			}
		}
	}
	found := map[string]bool{}
	_, err = b.Check(context.Background(), CheckOptions{Now: later, Workers: 1}, func(fd store.Finding) error {
		if fd.Kind != KindOrphan {
			t.Errorf("%s: check finds %s %s (%s)", where, fd.Kind, fd.Path, fd.Detail)
		}
		found[fd.Path] = true
		return nil
	})
	if err != nil {
		t.Errorf("%s: check: %v", where, err)
	}
	for _, l := range left {
		// A key's empty dir is no file: check does not report it, and
		// reap sweeps it (a power cut after its mkdir leaves one; so
		// does a key reaped).
		if named && !strings.HasSuffix(l, "/") && !found[l] {
			t.Errorf("%s: %s is left, and check does not name it (found %v)", where, l, found)
		}
	}
	return len(left)
}

// repair is the clean-up of check --repair, and a reap without a TTL for
// the empty key dirs, which check leaves to it.
func repair(t *testing.T, _ fleetCut, b *Backend) {
	t.Helper()
	if _, err := b.Check(context.Background(), CheckOptions{Repair: true, Now: later, Workers: 1}, nil); err != nil {
		t.Errorf("check --repair: %v", err)
	}
	if _, err := b.Reap(context.Background(), ReapOptions{Now: later}); err != nil {
		t.Errorf("reap: %v", err)
	}
}

// reapAgain is the clean-up of a reap: reap run again, twice: a key dir
// the first one empties (a removed key's file a cut brought back, swept)
// was not empty when it listed it, and is the next one's to sweep.
func reapAgain(t *testing.T, _ fleetCut, b *Backend) {
	t.Helper()
	for range 2 {
		if _, err := b.Reap(context.Background(), ReapOptions{TTL: 14 * 24 * time.Hour, Now: later}); err != nil {
			t.Errorf("reap: %v", err)
		}
	}
}

// TestPowerCutDuringAPromotion cuts the power at every write boundary of
// a key's first promotion and of a later one: the shared.Write steps (the
// key's dir made and its parent fsynced, the temp created and fsynced,
// the no-replace rename, or where the filesystem has none the link and
// the unlink, the dir fsync), the Backend's steps around the commit, and
// after Promote returned.
func TestPowerCutDuringAPromotion(t *testing.T) {
	for _, tc := range []struct {
		first, link bool
	}{{true, false}, {false, false}, {true, true}, {false, true}} {
		first := tc.first
		name := map[bool]string{true: "first generation", false: "later generation"}[first] + map[bool]string{true: ", link and unlink", false: ""}[tc.link]
		t.Run(name, func(t *testing.T) {
			f, parent := powerFixture(t)
			key := store.Key("github", "powercut", "promote")
			gens := map[uint64]string{1: "before", 2: "after"}
			var acked map[string]uint64
			if first {
				gens = map[uint64]string{1: "after"}
			} else {
				f.run(key, "before")
				acked = map[string]uint64{key: 1}
			}
			sess, _ := f.job(key, "after")
			c := armCutter(t, f, parent, faults.SharedWriteSync, faults.SharedWriteClose)
			c.noAtomic = tc.link
			res, err := f.promote(sess)
			c.disarm(f)
			if err != nil || !res.Promoted {
				t.Fatalf("promote: %+v, %v", res, err)
			}
			through := []string{"before create .tmp-", "before fsync .tmp-", "before rename .tmp-", "before fsync " + key, "at " + hookCommit, "at " + hookAfterCommit}
			if tc.link {
				through[2] = "before link .tmp-"
				through = append(through, "before unlink "+key+"/.tmp-")
			}
			if first {
				through = append(through, "before mkdir "+key, "before fsync t")
			}
			c.through(through...)
			c.verify(t, f, judge{
				markers: map[string]map[uint64]string{key: gens},
				least: func(at string) map[string]uint64 {
					if at == returned {
						return map[string]uint64{key: uint64(len(gens))}
					}
					return acked
				},
				clean: repair,
			})
		})
	}
}

// plantOrphans leaves in f's transcripts dir, beside key's generations, what
// reap and check --repair remove: a stray generation above the record's,
// a temp of a write that died, and the empty dir of a key with no record.
func plantOrphans(t *testing.T, f *fixture, key string) {
	t.Helper()
	if _, _, _, err := shared.Write(t.Context(), f.dir, key, 9, strings.NewReader(testHeader)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f.dir, key, ".tmp-0123456789abcdef"), []byte("torn"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(f.dir, store.Key("github", "powercut", "empty")), 0o700); err != nil {
		t.Fatal(err)
	}
}

// TestPowerCutDuringReap cuts the power at every write boundary of a reap
// that removes an expired key (its record, then its file) and sweeps the
// orphans (a superseded generation, a stray one, a temp, an empty key
// dir, and the dir the removed key emptied), and after it returned.
func TestPowerCutDuringReap(t *testing.T) {
	f, parent := powerFixture(t)
	old, fresh := store.Key("github", "powercut", "old"), store.Key("github", "powercut", "fresh")
	f.now = time.Now().Add(-30 * 24 * time.Hour)
	f.run(old, "old")
	f.now = time.Time{}
	f.run(fresh, "a")
	f.run(fresh, "b")
	plantOrphans(t, f, fresh)
	c := armCutter(t, f, parent)
	res, err := f.b.Reap(t.Context(), ReapOptions{TTL: 14 * 24 * time.Hour, Now: later})
	c.disarm(f)
	if err != nil || !slices.Equal(res.Removed, []string{old}) || len(res.Swept) != 5 || !slices.Contains(res.Swept, old+"/") {
		t.Fatalf("reap = %+v, %v; want %s removed, four orphans and its emptied dir swept", res, err, old)
	}
	c.through("at "+hookReapDelete, "at "+hookSweep, "before unlink "+old, "before unlink "+fresh, "before rmdir")
	c.verify(t, f, judge{
		markers: map[string]map[uint64]string{old: {1: "old"}, fresh: {1: "a", 2: "b"}},
		expired: []string{old},
		least:   func(string) map[string]uint64 { return map[string]uint64{fresh: 2} },
		gone: func(where string) []string {
			if strings.HasPrefix(where, "cut "+returned) {
				return []string{old}
			}
			return nil
		},
		clean: reapAgain,
	})
}

// TestPowerCutDuringCheckRepair cuts the power at every write boundary of
// a check --repair that removes a key's orphans (a superseded generation,
// a stray one, a temp), and after it returned.
func TestPowerCutDuringCheckRepair(t *testing.T) {
	f, parent := powerFixture(t)
	key := store.Key("github", "powercut", "repair")
	f.run(key, "a")
	f.run(key, "b")
	plantOrphans(t, f, key)
	c := armCutter(t, f, parent)
	var repaired []string
	_, err := f.b.Check(t.Context(), CheckOptions{Repair: true, Now: later, Workers: 1}, func(fd store.Finding) error {
		if fd.Repaired {
			repaired = append(repaired, fd.Path)
		}
		return nil
	})
	c.disarm(f)
	if err != nil || len(repaired) != 3 {
		t.Fatalf("check --repair repaired %v, %v; want the three orphan files", repaired, err)
	}
	c.through("at "+hookRepair, "at "+hookRepairLocked, "before unlink "+key)
	c.verify(t, f, judge{
		markers: map[string]map[uint64]string{key: {1: "a", 2: "b"}},
		least:   func(string) map[string]uint64 { return map[string]uint64{key: 2} },
		clean:   repair,
	})
}

// hostRun is a whole job on the key-dir store s that must promote.
func hostRun(t *testing.T, s *store.Store, key, marker string) {
	t.Helper()
	sess, jobDir := resolveOn(t, s, key)
	appendMarker(t, jobDir, marker)
	if res, err := s.Promote(sess, store.PromoteRequest{PiVersion: testJob.PiVersion}); err != nil || !res.Promoted {
		t.Fatalf("promote %s: %+v, %v", marker, res, err)
	}
}

// migrated is the clean-up of a migration cut short: the migration run
// again on the image (to is ToEtcd's direction) completes, and then every
// key resolves alike on the image's sessions root and on its fleet,
// resuming its last generation (parity); then check --repair and reap
// clean what the cut left in the transcripts dir.
func migrated(to bool, gens map[string]map[uint64]string) func(*testing.T, fleetCut, *Backend) {
	return func(t *testing.T, cut fleetCut, b *Backend) {
		t.Helper()
		where := fmt.Sprintf("cut %s, %s", cut.at, cut.Mode)
		root := filepath.Join(cut.Dir, "s")
		var sum MigrateSummary
		var err error
		if to {
			sum, err = ToEtcd(context.Background(), root, b, migOpts(), nil)
		} else {
			sum, err = FromEtcd(context.Background(), b, root, migOpts(), nil)
		}
		if err != nil || !sum.Complete() {
			t.Errorf("%s: the migration again: %+v, %v", where, sum, err)
		}
		host, err := store.New(root, store.Options{Bounds: gates.Bounds{TTL: 14 * 24 * time.Hour}})
		if err != nil {
			t.Fatal(err)
		}
		fleet := store.NewOn(b, store.Options{Bounds: gates.Bounds{TTL: 14 * 24 * time.Hour}})
		for key, g := range gens {
			hs, hdir := resolveOn(t, host, key)
			fs, fdir := resolveOn(t, fleet, key)
			hm, fm := markers(stagedOf(t, hdir)), markers(stagedOf(t, fdir))
			if !hs.Resume || !fs.Resume || hs.Gen() != uint64(len(g)) || fs.Gen() != hs.Gen() || !slices.Equal(hm, fm) || hm[len(hm)-1] != g[uint64(len(g))] {
				t.Errorf("%s: %s resolves {resume %v, %s, gen %d, %v} on the sessions root, {resume %v, %s, gen %d, %v} on the fleet; want both to resume gen %d", where, key, hs.Resume, hs.Reason, hs.Gen(), hm, fs.Resume, fs.Reason, fs.Gen(), fm, len(g))
			}
		}
		repair(t, cut, b)
	}
}

// migrationKeys is the keys and their generations of the migration
// tests: one key with two, one with one.
func migrationKeys() map[string]map[uint64]string {
	return map[string]map[uint64]string{
		store.Key("github", "powercut", "two"): {1: "a", 2: "b"},
		store.Key("github", "powercut", "one"): {1: "x"},
	}
}

// TestPowerCutDuringMigrateToEtcd cuts the power at every write boundary
// of migrate --to etcd (each key's file written by shared.Write, its
// record created) and after it returned; each image's migration, run
// again, completes with the sessions root and the fleet alike.
func TestPowerCutDuringMigrateToEtcd(t *testing.T) {
	f, parent := powerFixture(t)
	root := filepath.Join(parent, "s")
	host, err := store.New(root, store.Options{Bounds: gates.Bounds{TTL: 14 * 24 * time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	gens := migrationKeys()
	for key, g := range gens {
		for i := range len(g) {
			hostRun(t, host, key, g[uint64(i+1)])
		}
	}
	c := armCutter(t, f, parent, faults.SharedWriteSync, faults.SharedWriteClose, faults.ToEtcdWritten, faults.ToEtcdCommitted)
	sum, err := ToEtcd(t.Context(), root, f.b, migOpts(), nil)
	c.disarm(f)
	if err != nil || !sum.Complete() || sum.Migrated != len(gens) {
		t.Fatalf("migrate --to etcd: %+v, %v", sum, err)
	}
	c.through("before mkdir", "before fsync t", "before create .tmp-", "before fsync .tmp-", "before rename .tmp-", "at "+string(faults.ToEtcdWritten), "at "+string(faults.ToEtcdCommitted))
	c.verify(t, f, judge{
		markers: gens,
		least: func(at string) map[string]uint64 {
			if at != returned {
				return nil
			}
			out := map[string]uint64{}
			for key, g := range gens {
				out[key] = uint64(len(g))
			}
			return out
		},
		clean:     migrated(true, gens),
		completes: true,
	})
}

// TestPowerCutDuringMigrateFromEtcd cuts the power at every write
// boundary of migrate --from etcd into a sessions root that does not
// exist yet (the root made, each key's dir made, its temp written and
// fsynced, meta.db committed, the rename into place, the dir fsyncs) and
// after it returned: a key the run reported is whole on the image's
// root, and the migration, run again, completes with the root and the
// fleet alike.
func TestPowerCutDuringMigrateFromEtcd(t *testing.T) {
	cutMigrateFromEtcd(t, migrationKeys(), nil)
}

// TestPowerCutDuringMigrateFromEtcdOverAnOlderGeneration cuts the power
// at every write boundary of migrate --from etcd bringing a key forward
// over its key dir, which holds an older generation (meta.db and
// current.jsonl, from an earlier run) that the fleet has promoted past
// since: the new generation's temp, the commit naming it with the old one
// as the pending entry's prev, the rename over current.jsonl. At every
// cut the root's key resumes the old generation whole or the new one
// whole, never a torn or missing transcript meta.db names.
func TestPowerCutDuringMigrateFromEtcdOverAnOlderGeneration(t *testing.T) {
	key := store.Key("github", "powercut", "older")
	cutMigrateFromEtcd(t, map[string]map[uint64]string{key: {1: "a", 2: "b"}}, map[string]uint64{key: 1})
}

// TestPowerCutDuringMigrateFromEtcdOverSeveralKeys cuts the power at
// every write boundary of migrate --from etcd into a root that holds
// keys already, several at once: one whose key dir holds an older
// generation (replaced), one the root does not have (made), one already
// at the fleet's generation (left as it is). At every cut the replaced
// key resumes its old generation whole or its new one, the one already
// there its generation, and the new one its generation whole or not at
// all; the root's own check finds nothing but what a cut leaves by
// design; nothing acknowledged is lost.
func TestPowerCutDuringMigrateFromEtcdOverSeveralKeys(t *testing.T) {
	replaced, made, there := store.Key("github", "powercut", "replaced"), store.Key("github", "powercut", "new"), store.Key("github", "powercut", "there")
	cutMigrateFromEtcd(t, map[string]map[uint64]string{
		replaced: {1: "a", 2: "b"},
		made:     {1: "x"},
		there:    {1: "p", 2: "q"},
	}, map[string]uint64{replaced: 1, there: 2})
}

// cutMigrateFromEtcd promotes gens on the fleet and cuts migrate --from
// etcd into its sessions root. A key in old is migrated into the root
// (uncut) once it holds that generation, before the rest are promoted:
// the cut run then replaces it, or, at its last generation, finds it
// there. Before anything runs again, each image's root resumes a key
// whole on its last generation or (a key in old) on the old one, or (a
// key not in old) not at all; after the run returned, every key on its
// last. The fleet's records, each promoted before the run, hold every
// key's last generation at every cut.
func cutMigrateFromEtcd(t *testing.T, gens map[string]map[uint64]string, old map[string]uint64) {
	f, parent := powerFixture(t)
	root := filepath.Join(parent, "s")
	for key, g := range gens {
		for i := range old[key] {
			f.run(key, g[i+1])
		}
	}
	if len(old) > 0 {
		if sum, err := FromEtcd(t.Context(), f.b, root, migOpts(), nil); err != nil || !sum.Complete() || sum.Migrated != len(old) {
			t.Fatalf("migrate --from etcd of the older generations: %+v, %v", sum, err)
		}
	}
	for key, g := range gens {
		for i := old[key]; i < uint64(len(g)); i++ {
			f.run(key, g[i+1])
		}
	}
	promoted, already := map[string]uint64{}, 0
	for key, g := range gens {
		promoted[key] = uint64(len(g))
		if old[key] == uint64(len(g)) {
			already++
		}
	}
	c := armCutter(t, f, parent, faults.FromEtcdTemp, faults.FromEtcdCommitted, faults.FromEtcdRenamed, faults.FromEtcdSynced)
	sum, err := FromEtcd(t.Context(), f.b, root, migOpts(), nil)
	c.disarm(f)
	if err != nil || !sum.Complete() || sum.Migrated != len(gens)-already || sum.Already != already {
		t.Fatalf("migrate --from etcd: %+v, %v; want %d migrated, %d already", sum, err, len(gens)-already, already)
	}
	steps := []string{"before mkdir", "before create .current.jsonl.tmp-", "before fsync .current.jsonl.tmp-", "at " + string(faults.FromEtcdCommitted), "before rename .current.jsonl.tmp-", "at " + string(faults.FromEtcdSynced)}
	if len(old) == 0 {
		steps = append(steps, "before mkdir s", "before fsync "+filepath.Base(parent))
	}
	c.through(steps...)
	c.verify(t, f, judge{
		markers: gens,
		least:   func(string) map[string]uint64 { return promoted },
		clean: func(t *testing.T, cut fleetCut, b *Backend) {
			t.Helper()
			root := filepath.Join(cut.Dir, "s")
			if _, err := os.Stat(root); err == nil {
				host, err := store.New(root, store.Options{Bounds: gates.Bounds{TTL: 14 * 24 * time.Hour}})
				if err != nil {
					t.Fatal(err)
				}
				// The root is a store, whose check knows a committed
				// record naming a file a power cut took only as damage
				// (transcript-mismatch): a key's temp and its name are
				// durable before meta.db's commit names them, so a cut
				// leaves a temp no record names, or a promotion in flight
				// that the next writer (the run again) rolls forward.
				if _, err := host.Check(context.Background(), store.CheckOptions{Workers: 1}, func(fd store.Finding) error {
					if fd.Kind != store.KindStrayTemp && fd.Kind != store.KindPendingPromotion {
						t.Errorf("cut %s, %s: the sessions root's check finds %s %s (%s)", cut.at, cut.Mode, fd.Kind, fd.Path, fd.Detail)
					}
					return nil
				}); err != nil {
					t.Errorf("cut %s, %s: the sessions root's check: %v", cut.at, cut.Mode, err)
				}
				for key, g := range gens {
					sess, jobDir := resolveOn(t, host, key)
					m := markers(stagedOf(t, jobDir))
					wholeAt := func(gen uint64) bool {
						return gen > 0 && sess.Resume && sess.Gen() == gen && len(m) == int(gen) && m[gen-1] == g[gen]
					}
					last := uint64(len(g))
					switch {
					case cut.at == returned && !wholeAt(last):
						t.Errorf("cut %s, %s: the sessions root resolves %s {resume %v, %s, gen %d, %v}, want gen %d whole: the run reported it", cut.at, cut.Mode, key, sess.Resume, sess.Reason, sess.Gen(), m, last)
					case old[key] > 0 && !wholeAt(old[key]) && !wholeAt(last):
						t.Errorf("cut %s, %s: the sessions root resolves %s {resume %v, %s, gen %d, %v}, want gen %d or gen %d whole: meta.db names a generation it held", cut.at, cut.Mode, key, sess.Resume, sess.Reason, sess.Gen(), m, old[key], last)
					case old[key] == 0 && sess.Resume && !wholeAt(last):
						t.Errorf("cut %s, %s: the sessions root resolves %s {resume %v, %s, gen %d, %v}, want gen %d whole or no resume", cut.at, cut.Mode, key, sess.Resume, sess.Reason, sess.Gen(), m, last)
					}
				}
			} else if cut.at == returned || len(old) > 0 {
				t.Errorf("cut %s, %s: the sessions root is gone: %v", cut.at, cut.Mode, err)
			}
			migrated(false, gens)(t, cut, b)
		},
		completes: true,
	})
}
