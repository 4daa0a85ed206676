package store

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"sessdb/db"
	"sessdb/gates"
	"sessdb/internal/faults"
)

// The A,B,A swap (DESIGN.md, reliability rules; the legacy store's open
// residual #390): between two of an operation's steps, the key dir's name
// is pointed at another directory B, and in the A,B,A form pointed back at
// A before the operation ends, so a check by name at the end sees A again.
// The store opens the key dir once, with O_DIRECTORY|O_NOFOLLOW, and works
// from that descriptor, so a swap after the open changes nothing it reads or
// writes. These tests swap at every read boundary of Resolve
// (FaultResolve*) and every write boundary of Promote (Fault*, and the temp
// file's creation), and check that:
//
//   - nothing of B's is staged, and the verdict is A's: a resume of A's
//     bytes, since the descriptor pins A (a swap before the open makes the
//     key a link, refused as not-a-regular-file);
//   - nothing in B is opened, read or written: an inotify watch on B sees
//     no event at all, B's tree is unchanged byte for byte and in mtime,
//     and an exclusive flock held on B's meta.db is never waited on (an
//     operation that opened it would report locked);
//   - a promotion lands in A, never in B, and every later resolve of the
//     key hands over only bytes its record describes.
//
// B is either a symlink at the key's name to a directory outside the
// sessions root ("link"), or a real directory moved to the key's name from
// beside it ("dir"); both hold a valid, resumable key state of their own
// with a different transcript and a different meta.db.

const bMarker = "B: the attacker's transcript"

// swapRig is a sessions root with a key dir A, and a directory B that toB
// puts at A's name and toA takes away again.
type swapRig struct {
	t      *testing.T
	s      *Store
	root   string
	key    string
	kind   string // "link" or "dir"
	layout Layout // A's layout
	aPath  string // <root>/<key>
	aside  string // where A waits while B has its name
	bPath  string // where B lives while it does not have A's name
	a      []byte // A's transcript
	aGen   uint64 // A's generation (0 for a legacy A)
	b      []byte // B's transcript
	inB    bool   // B has A's name
}

func newSwapRig(t *testing.T, kind string, layout Layout) *swapRig {
	t.Helper()
	s, root, _ := newTestStore(t, gates.Bounds{})
	// A mutation that opened B's locked meta.db must show as locked, fast.
	s.opts.LockTimeout = time.Second
	r := &swapRig{t: t, s: s, root: root, key: testKey, kind: kind, layout: layout,
		aPath: keyDirPath(root, testKey), aside: filepath.Join(root, "a-moved-aside")}
	switch layout {
	case LayoutDB:
		_, res := runJob(t, s, r.key, localJob(), PromoteRequest{}, "A: the key's own conversation")
		r.aGen = res.Gen
	case LayoutLegacy:
		writeLegacy(t, root, r.key, map[string]string{
			TranscriptName: string(transcriptBytes(s.opts.Now(), "A: the key's own conversation")),
			"pi-version":   testPi,
			"venue":        "local\n",
		})
	}
	r.a = readCanonical(t, root, r.key)

	// B: the same key promoted twice in another root, so it is a valid
	// key state with its own meta.db, another generation and other bytes,
	// resumable by the same job if anything were to follow it.
	other, broot, _ := newTestStore(t, gates.Bounds{})
	runJob(t, other, r.key, localJob(), PromoteRequest{}, bMarker)
	runJob(t, other, r.key, localJob(), PromoteRequest{}, bMarker+", longer")
	r.b = readCanonical(t, broot, r.key)
	if bytes.Equal(r.a, r.b) || len(r.a) == len(r.b) {
		t.Fatal("A and B must differ in bytes and size")
	}
	switch kind {
	case "link":
		r.bPath = filepath.Join(t.TempDir(), "attacker") // outside the sessions root
	case "dir":
		r.bPath = filepath.Join(root, "b-waiting") // beside A, a rename away
	}
	if err := os.Rename(keyDirPath(broot, r.key), r.bPath); err != nil {
		t.Fatal(err)
	}
	return r
}

// toB gives A's name to B: A is renamed aside, and a link to B, or B
// itself, takes its name.
func (r *swapRig) toB() {
	r.t.Helper()
	if r.inB {
		r.t.Fatal("B already has A's name")
	}
	if err := os.Rename(r.aPath, r.aside); err != nil {
		r.t.Fatal(err)
	}
	var err error
	if r.kind == "link" {
		err = os.Symlink(r.bPath, r.aPath)
	} else {
		err = os.Rename(r.bPath, r.aPath)
	}
	if err != nil {
		r.t.Fatal(err)
	}
	r.inB = true
}

// toA gives A its name back.
func (r *swapRig) toA() {
	r.t.Helper()
	if !r.inB {
		r.t.Fatal("A already has its name")
	}
	var err error
	if r.kind == "link" {
		err = os.Remove(r.aPath)
	} else {
		err = os.Rename(r.aPath, r.bPath)
	}
	if err != nil {
		r.t.Fatal(err)
	}
	if err := os.Rename(r.aside, r.aPath); err != nil {
		r.t.Fatal(err)
	}
	r.inB = false
}

// aDir and bDir are where A and B are now.
func (r *swapRig) aDir() string {
	if r.inB {
		return r.aside
	}
	return r.aPath
}

func (r *swapRig) bDir() string {
	if r.inB && r.kind == "dir" {
		return r.aPath
	}
	return r.bPath
}

// state is treeState relative to dir, so that a directory can be compared
// with itself across a rename.
func (r *swapRig) state(dir string) string {
	r.t.Helper()
	return strings.ReplaceAll(treeState(r.t, dir), dir, "<dir>")
}

// guardB holds an exclusive flock on B's meta.db and starts an inotify
// watch on B. stop ends both and returns every event the watch saw on B
// itself or on a name in it: an open, a read, a write, a create, a removal,
// an attribute change (B being moved is the test's own doing, not watched).
func (r *swapRig) guardB() (stop func() []string) {
	r.t.Helper()
	lock, err := os.Open(filepath.Join(r.bDir(), db.FileName))
	if err != nil {
		r.t.Fatal(err)
	}
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		r.t.Fatal(err)
	}
	w := watchDir(r.t, r.bDir())
	return func() []string {
		defer lock.Close()
		if w == nil {
			return nil
		}
		defer w.close()
		return w.events()
	}
}

// TestKeyDirSwapGuardSeesB checks the guard itself: each way of reaching
// into B that a path-based implementation would use is seen. Opening B
// (the directory), reading its transcript, and opening its meta.db the way
// Resolve does, which the flock holds off until the lock timeout.
func TestKeyDirSwapGuardSeesB(t *testing.T) {
	r := newSwapRig(t, "link", LayoutDB)
	stop := r.guardB()
	bd, err := os.Open(r.bPath)
	if err != nil {
		stop()
		t.Fatal(err)
	}
	defer bd.Close()
	if _, err := os.ReadFile(filepath.Join(r.bPath, TranscriptName)); err != nil {
		stop()
		t.Fatal(err)
	}
	if d, err := db.OpenReader(bd, "B's meta.db", db.Options{LockTimeout: 200 * time.Millisecond}); err == nil {
		d.Close()
		t.Error("B's meta.db opened past the guard's flock")
	} else if !errors.Is(err, db.ErrLockTimeout) {
		t.Errorf("opening B's meta.db under the guard's flock = %v, want a lock timeout (Resolve reports it as locked)", err)
	}
	evs := strings.Join(stop(), "; ")
	if w := watchDir(t, r.bPath); w == nil {
		t.Skip("no inotify here: the guard rests on the flock and B's tree")
	} else {
		w.close()
	}
	for _, want := range []string{".: open|isdir", TranscriptName + ": open", TranscriptName + ": access", db.FileName + ": open"} {
		if !strings.Contains(evs, want) {
			t.Errorf("the guard missed %q; it saw: %s", want, evs)
		}
	}
}

// hooks returns a Fault function that runs each scheduled action at its
// point and records the points it saw, and a check that every scheduled
// point was reached (a swap test whose hook never fires proves nothing).
func (r *swapRig) hooks(schedule map[faults.Point]func()) (func(faults.Point) error, func()) {
	seen := map[faults.Point]bool{}
	fault := func(p faults.Point) error {
		// Once: a point inside the meta.db open is reached again by an
		// open that retries, and by later opens of the same operation.
		if f := schedule[p]; f != nil && !seen[p] {
			seen[p] = true
			f()
		}
		seen[p] = true
		return nil
	}
	check := func() {
		r.t.Helper()
		for p := range schedule {
			if !seen[p] {
				r.t.Errorf("fault point %s was never reached", p)
			}
		}
	}
	return fault, check
}

// laterResolvesAreConsistent resolves the key as it now is (B at its name
// or not) and then with A given its name back, and checks each resume
// against the record of the dir it came from.
func (r *swapRig) laterResolvesAreConsistent(wantA []byte, wantGen uint64) {
	r.t.Helper()
	if r.inB {
		sess, data := r.resolveNow()
		if r.kind == "link" {
			want(r.t, sess, false, gates.NotARegularFile)
		} else if !sess.Resume || !bytes.Equal(data, r.b) {
			r.t.Fatalf("with B at the key's name, resolve = %+v, %d bytes; want B's own transcript", sess, len(data))
		}
		r.toA()
	}
	sess, data := r.resolveNow()
	if !sess.Resume || !bytes.Equal(data, wantA) || sess.Gen() != wantGen {
		r.t.Fatalf("with A back, resolve = %+v (%d bytes), want A's %d bytes at gen %d", sess, len(data), len(wantA), wantGen)
	}
}

// resolveNow is a resolve with no hooks; a resume of a db key is checked
// against the record (checkDescribed).
func (r *swapRig) resolveNow() (Session, []byte) {
	r.t.Helper()
	faults.Set(nil)
	if fi, err := os.Lstat(filepath.Join(r.aPath, db.FileName)); err == nil && fi.Mode().IsRegular() {
		return checkDescribed(r.t, r.s, r.root, r.key)
	}
	sess, jobDir := mustResolve(r.t, r.s, r.key, localJob())
	return sess, staged(r.t, jobDir)
}

var resolvePoints = []faults.Point{faults.ResolveAfterKeyDirOpen, faults.ResolveAfterMetaOpen, faults.ResolveAfterGates, faults.ResolveAfterCopy}

// swapCase is one schedule: B takes A's name at swap ("" = before the
// operation starts), and A takes it back at back ("" = not before the
// operation ends).
type swapCase struct{ swap, back faults.Point }

func (c swapCase) name() string {
	n := "swap-at-" + string(c.swap)
	if c.swap == "" {
		n = "swapped-before"
	}
	if c.back != "" {
		n += "/back-at-" + string(c.back)
	}
	return strings.ReplaceAll(n, "/", "_")
}

func resolveSwapCases(aba bool) []swapCase {
	var cs []swapCase
	for i, p := range resolvePoints {
		if !aba {
			cs = append(cs, swapCase{swap: p})
			continue
		}
		for _, q := range resolvePoints[i+1:] {
			cs = append(cs, swapCase{swap: p, back: q})
		}
	}
	return cs
}

// TestKeyDirSwapDuringResolve swaps B in at each read boundary of Resolve
// and leaves it there; "swapped-before" is the key dir that is already a
// link when Resolve starts.
func TestKeyDirSwapDuringResolve(t *testing.T) {
	cases := append([]swapCase{{}}, resolveSwapCases(false)...)
	runResolveSwaps(t, cases)
}

// TestKeyDirSwapABADuringResolve swaps B in at one read boundary and A
// back at a later one: at the end of Resolve the key's name is A's again.
func TestKeyDirSwapABADuringResolve(t *testing.T) {
	runResolveSwaps(t, resolveSwapCases(true))
}

func runResolveSwaps(t *testing.T, cases []swapCase) {
	for _, layout := range []Layout{LayoutDB, LayoutLegacy} {
		for _, kind := range []string{"link", "dir"} {
			for _, c := range cases {
				if c.swap == "" && kind == "dir" {
					continue // a real dir B at the key's name from the start is simply the key
				}
				t.Run(fmt.Sprintf("%s/%s/%s", layout, kind, c.name()), func(t *testing.T) {
					resolveSwap(t, kind, layout, c)
				})
			}
		}
	}
}

// during runs op, which runs the operation with fault as its fault hook,
// with B swapped in as c says (before op when c.swap is "") and watched.
// It fails the test if a point of c was not reached or anything of B was
// touched, and returns A's and B's state from before.
func (r *swapRig) during(c swapCase, op func(fault func(faults.Point) error)) (aBefore, bBefore string) {
	schedule := map[faults.Point]func(){}
	if c.swap == "" {
		r.toB()
	} else {
		schedule[c.swap] = r.toB
	}
	if c.back != "" {
		schedule[c.back] = r.toA
	}
	fault, reached := r.hooks(schedule)
	bBefore, aBefore = r.state(r.bDir()), r.state(r.aDir())
	stop := r.guardB()
	op(fault)
	touched := stop()
	reached()
	if len(touched) > 0 {
		r.t.Errorf("B (%s) was reached: %s", r.kind, strings.Join(touched, "; "))
	}
	return aBefore, bBefore
}

func resolveSwap(t *testing.T, kind string, layout Layout, c swapCase) {
	r := newSwapRig(t, kind, layout)
	jobDir := t.TempDir()
	var sess Session
	var err error
	aBefore, bBefore := r.during(c, func(fault func(faults.Point) error) {
		faults.Set(fault)
		sess, err = r.s.Resolve(r.key, localJob(), jobDir)
		faults.Set(nil)
	})
	if err != nil {
		t.Fatalf("resolve: %v", err)
	}
	got := staged(t, jobDir)
	if bytes.Contains(got, []byte(bMarker)) {
		t.Fatalf("B's transcript was staged: %q", got)
	}
	if c.swap == "" {
		// The key's name is a link when it is opened: refused, never followed.
		want(t, sess, false, gates.NotARegularFile)
		if len(got) != 0 {
			t.Fatalf("a cold start staged %d bytes", len(got))
		}
	} else {
		// The descriptor pins A: A's lock, A's record, A's transcript.
		want(t, sess, true, gates.Resumed)
		if !bytes.Equal(got, r.a) || sess.Bytes != int64(len(r.a)) || sess.Gen() != r.aGen {
			t.Fatalf("staged %d bytes at gen %d, want A's %d bytes at gen %d", len(got), sess.Gen(), len(r.a), r.aGen)
		}
	}
	if after := r.state(r.bDir()); after != bBefore {
		t.Fatalf("B changed:\n%s\n---\n%s", bBefore, after)
	}
	if after := r.state(r.aDir()); after != aBefore {
		t.Fatalf("resolve changed A:\n%s\n---\n%s", aBefore, after)
	}
	r.laterResolvesAreConsistent(r.a, r.aGen)
}

// hookDisk calls onCreate before the promotion's temp file is created: a
// point after the key dir is opened and locked, ahead of the first Fault
// point.
type hookDisk struct {
	diskWrites
	onCreate func()
}

func (h hookDisk) createTemp(dir *os.File, name string) (*os.File, error) {
	if h.onCreate != nil {
		h.onCreate()
	}
	return h.diskWrites.createTemp(dir, name)
}

const beforeTempCreate faults.Point = "test/before-temp-create"

var promotePoints = []faults.Point{beforeTempCreate, faults.PromoteAfterTempWrite, faults.PromoteAfterTempSync, faults.PromoteAfterCommit, faults.PromoteAfterRename, faults.PromoteAfterDirSync}

// TestKeyDirSwapDuringPromote swaps B in at each write boundary of Promote
// and leaves it there, or swaps A back at a later boundary (A,B,A);
// "swapped-before" is a key dir that is already a link to B.
func TestKeyDirSwapDuringPromote(t *testing.T) {
	cases := []swapCase{{}}
	for i, p := range promotePoints {
		cases = append(cases, swapCase{swap: p})
		for _, q := range promotePoints[i+1:] {
			cases = append(cases, swapCase{swap: p, back: q})
		}
	}
	for _, kind := range []string{"link", "dir"} {
		for _, c := range cases {
			if c.swap == "" && kind == "dir" {
				continue
			}
			t.Run(fmt.Sprintf("%s/%s", kind, c.name()), func(t *testing.T) { promoteSwap(t, kind, c) })
		}
	}
}

func promoteSwap(t *testing.T, kind string, c swapCase) {
	r := newSwapRig(t, kind, LayoutDB)
	sess, jobDir := mustResolve(t, r.s, r.key, localJob())
	next := append(staged(t, jobDir), entryLine("A: the run that is promoted")...)
	stage(t, jobDir, next)

	var res PromoteResult
	var err error
	aBefore, bBefore := r.during(c, func(fault func(faults.Point) error) {
		faults.Set(fault)
		r.s.disk = hookDisk{onCreate: func() { fault(beforeTempCreate) }}
		res, err = r.s.Promote(sess, PromoteRequest{PiVersion: testPi})
		faults.Set(nil)
		r.s.disk = diskWrites{}
	})
	if err != nil {
		t.Fatalf("promote: %v", err)
	}
	if after := r.state(r.bDir()); after != bBefore {
		t.Fatalf("B changed:\n%s\n---\n%s", bBefore, after)
	}
	if c.swap == "" {
		if res.Promoted || res.Reason != gates.NotARegularFile {
			t.Fatalf("promote through a key dir that is a link = %+v", res)
		}
		if after := r.state(r.aDir()); after != aBefore {
			t.Fatalf("a refused promotion changed A:\n%s\n---\n%s", aBefore, after)
		}
		r.laterResolvesAreConsistent(r.a, r.aGen)
		return
	}
	if !res.Promoted || res.Gen != r.aGen+1 || res.Bytes != int64(len(next)) {
		t.Fatalf("promote = %+v, want promoted at gen %d with %d bytes", res, r.aGen+1, len(next))
	}
	// The promotion landed in A, wherever A now is.
	if got, err := os.ReadFile(filepath.Join(r.aDir(), TranscriptName)); err != nil || !bytes.Equal(got, next) {
		t.Fatalf("A's transcript is not the promoted one (%v)", err)
	}
	names, _ := filepath.Glob(filepath.Join(r.aDir(), tmpPrefix+"*"))
	if len(names) != 0 {
		t.Fatalf("temps left in A: %v", names)
	}
	r.laterResolvesAreConsistent(next, r.aGen+1)
}

// TestKeyDirSwapPointsErrorReturn: an error at a read boundary of Resolve
// is a fault, as an I/O error there would be: Resolve returns it, removes
// the staged file and releases the key's lock (a promotion right after
// gets the exclusive lock). dump and check, which share Resolve's reader,
// never call these points.
func TestKeyDirSwapPointsErrorReturn(t *testing.T) {
	injected := errors.New("injected")
	for _, p := range resolvePoints {
		t.Run(string(p), func(t *testing.T) {
			s, root, _ := newTestStore(t, gates.Bounds{})
			s.opts.LockTimeout = time.Second
			runJob(t, s, testKey, localJob(), PromoteRequest{}, "before")
			jobDir := t.TempDir()
			faults.Set(func(q faults.Point) error {
				if q == p {
					return injected
				}
				return nil
			})
			sess, err := s.Resolve(testKey, localJob(), jobDir)
			faults.Set(nil)
			if !errors.Is(err, injected) {
				t.Fatalf("resolve with an error at %s = %+v, %v; want the error", p, sess, err)
			}
			if _, err := os.Lstat(filepath.Join(jobDir, StagedDirName, TranscriptName)); !os.IsNotExist(err) {
				t.Fatalf("a failed resolve left a staged file (%v)", err)
			}
			runJob(t, s, testKey, localJob(), PromoteRequest{}, "after")
			checkDescribed(t, s, root, testKey)

			var seen []faults.Point
			faults.Set(func(q faults.Point) error {
				// The meta.db open's own points (db-open/*) are every
				// open's; Resolve's are Resolve's alone.
				if slices.Contains(resolvePoints, q) {
					seen = append(seen, q)
				}
				return nil
			})
			k, err := s.openKey(testKey, "")
			faults.Set(nil)
			if err != nil {
				t.Fatal(err)
			}
			k.close()
			if len(seen) != 0 {
				t.Fatalf("dump's reader called %v", seen)
			}
		})
	}
}
