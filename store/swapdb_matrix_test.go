package store

import (
	"bytes"
	"context"
	"io"
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
	"sessdb/internal/fsat"
)

// metaSwap replaces the meta.db of the key dir dir by something else, as
// an operator's hand, a restore or another process could, inside an open
// of it. saved is a copy of the file that was there, outside the root.
type metaSwap struct {
	name string
	do   func(t *testing.T, dir, saved, other string)
}

func copyFile(t *testing.T, from, to string, n int64) {
	t.Helper()
	src, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	tmp := to + ".swap"
	dst, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	r := io.Reader(src)
	if n >= 0 {
		r = io.LimitReader(src, n)
	}
	if _, err := io.Copy(dst, r); err != nil {
		t.Fatal(err)
	}
	dst.Close()
	if err := os.Rename(tmp, to); err != nil {
		t.Fatal(err)
	}
}

var metaSwaps = []metaSwap{
	{"link", func(t *testing.T, dir, saved, _ string) {
		meta := filepath.Join(dir, db.FileName)
		must(t, os.Remove(meta))
		must(t, os.Symlink(saved, meta))
	}},
	{"fifo", func(t *testing.T, dir, _, _ string) {
		meta := filepath.Join(dir, db.FileName)
		must(t, os.Remove(meta))
		must(t, unix.Mkfifo(meta, 0o600))
	}},
	{"directory", func(t *testing.T, dir, _, _ string) {
		meta := filepath.Join(dir, db.FileName)
		must(t, os.Remove(meta))
		must(t, os.Mkdir(meta, 0o700))
	}},
	{"truncated copy", func(t *testing.T, dir, saved, _ string) {
		copyFile(t, saved, filepath.Join(dir, db.FileName), 3*1024)
	}},
	{"another key's meta.db", func(t *testing.T, dir, _, other string) {
		copyFile(t, filepath.Join(other, db.FileName), filepath.Join(dir, db.FileName), -1)
	}},
	{"made anew", func(t *testing.T, dir, _, other string) {
		// Unlinked (a reap, a rollback) and made again by another
		// process's first promotion of the key: its meta.db and
		// transcript.
		must(t, os.Remove(filepath.Join(dir, db.FileName)))
		copyFile(t, filepath.Join(other, TranscriptName), filepath.Join(dir, TranscriptName), -1)
		copyFile(t, filepath.Join(other, db.FileName), filepath.Join(dir, db.FileName), -1)
	}},
	{"unlinked", func(t *testing.T, dir, _, _ string) {
		must(t, os.Remove(filepath.Join(dir, db.FileName)))
	}},
	{"quarantined", nil}, // the store's own Quarantine, in the open's window
	{"reaped", func(t *testing.T, dir, _, _ string) {
		// A whole reap's moves, by hand: the reap's own open would wait
		// for the in-process lock the open in its window holds.
		gone := filepath.Join(filepath.Dir(dir), newReapedName(testKey))
		must(t, os.Rename(dir, gone))
		must(t, os.RemoveAll(gone))
	}},
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// metaSwapRig is a key A with one promotion, a resolve of it staged with
// one more line, and the copies a swap needs: A's meta.db saved outside
// the root, and a key made anew (the same key, promoted once in another
// root).
type metaSwapRig struct {
	s        *Store
	root     string
	dir      string // A, at the key's name
	saved    string // a copy of A's meta.db, outside the root
	other    string // the key made anew, in another root
	sess     Session
	held     *os.File // A's meta.db as it was, held open across the swap
	heldWas  []byte
	quarDir  string // where a quarantine in the window put A
	swapDone bool
}

func newMetaSwapRig(t *testing.T, other string) *metaSwapRig {
	t.Helper()
	s, root, _ := newTestStore(t, gates.Bounds{})
	s.opts.LockTimeout = time.Second
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "A one")
	r := &metaSwapRig{s: s, root: root, dir: filepath.Join(root, testKey), other: other}
	r.saved = filepath.Join(t.TempDir(), "saved-meta.db")
	copyFile(t, filepath.Join(r.dir, db.FileName), r.saved, -1)
	var jobDir string
	r.sess, jobDir = mustResolve(t, s, testKey, localJob())
	stage(t, jobDir, append(staged(t, jobDir), entryLine("A two")...))
	var err error
	if r.held, err = os.Open(filepath.Join(r.dir, db.FileName)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.held.Close() })
	r.heldWas, err = os.ReadFile(r.saved)
	must(t, err)
	return r
}

// madeAnew is a key promoted once in a root of its own: what another
// process's first promotion leaves.
func madeAnew(t *testing.T) string {
	other, oroot, _ := newTestStore(t, gates.Bounds{})
	runJob(t, other, testKey, localJob(), PromoteRequest{}, "B, the key made anew, longer than A")
	return filepath.Join(oroot, testKey)
}

// arm does sw once, at the first time any open reaches p.
func (r *metaSwapRig) arm(t *testing.T, p faults.Point, sw metaSwap) {
	faults.Set(func(q faults.Point) error {
		if q != p || r.swapDone {
			return nil
		}
		r.swapDone = true
		if sw.do != nil {
			sw.do(t, r.dir, r.saved, r.other)
			return nil
		}
		aside, err := r.s.Quarantine(testKey)
		if err != nil {
			t.Errorf("quarantine in the open's window: %v", err)
		}
		r.quarDir = filepath.Join(r.root, aside)
		return nil
	})
}

// metaSwapOutcome is what an operation said.
type metaSwapOutcome struct {
	resume   bool
	reason   gates.Reason
	promoted bool
	err      error
	staged   []byte
}

type metaSwapOp struct {
	name string
	run  func(t *testing.T, r *metaSwapRig) metaSwapOutcome
	// want checks what the operation said after swap sw.
	want func(t *testing.T, sw string, got metaSwapOutcome, bBytes []byte)
}

// resolveSays is what a resolve says of the key after each swap in its
// open: a named reason, never an error; a resume only of what the record
// at the key's name describes (the key made anew).
var resolveSays = map[string]gates.Reason{
	"link": gates.MetaUnreadable, "fifo": gates.MetaUnreadable, "directory": gates.MetaUnreadable,
	"truncated copy": gates.MetaUnreadable, "another key's meta.db": gates.TranscriptReplaced,
	"made anew": gates.Resumed, "unlinked": gates.PiVersionChanged,
	"quarantined": gates.Absent, "reaped": gates.Absent,
}

var metaSwapOps = []metaSwapOp{
	{"resolve", func(t *testing.T, r *metaSwapRig) metaSwapOutcome {
		jobDir := t.TempDir()
		sess, err := r.s.Resolve(testKey, localJob(), jobDir)
		b, _ := os.ReadFile(filepath.Join(jobDir, StagedDirName, TranscriptName))
		return metaSwapOutcome{resume: sess.Resume, reason: sess.Reason, err: err, staged: b}
	}, func(t *testing.T, sw string, got metaSwapOutcome, bBytes []byte) {
		if got.err != nil || got.reason != resolveSays[sw] {
			t.Fatalf("resolve = %s, %v; want %s", got.reason, got.err, resolveSays[sw])
		}
		if got.resume != (got.reason == gates.Resumed) || got.resume && !bytes.Equal(got.staged, bBytes) || !got.resume && len(got.staged) != 0 {
			t.Fatalf("resolve staged %d bytes (resume %v); want the key made anew's %d, or nothing", len(got.staged), got.resume, len(bBytes))
		}
	}},
	{"dump", func(t *testing.T, r *metaSwapRig) metaSwapOutcome {
		var out metaSwapOutcome
		out.err = r.s.InspectWith(context.Background(), InspectOptions{Only: testKey}, func(k KeyReport) error {
			if k.Verdict != nil {
				out.reason = gates.Reason(k.Verdict.Reason)
			}
			return nil
		})
		return out
	}, func(t *testing.T, sw string, got metaSwapOutcome, _ []byte) {
		// Without a job, dump says "?" of a verdict a job's values decide.
		if got.err != nil || got.reason != resolveSays[sw] && (got.reason != Undetermined || resolveSays[sw] == gates.MetaUnreadable || resolveSays[sw] == gates.Absent) {
			t.Fatalf("dump = %s, %v; want what a resolve says, %s", got.reason, got.err, resolveSays[sw])
		}
	}},
	{"check", func(t *testing.T, r *metaSwapRig) metaSwapOutcome {
		var out metaSwapOutcome
		_, out.err = r.s.Check(context.Background(), CheckOptions{}, func(f Finding) error { return nil })
		return out
	}, func(t *testing.T, sw string, got metaSwapOutcome, _ []byte) {
		if got.err != nil {
			t.Fatalf("check: %v", got.err)
		}
	}},
	{"promote", func(t *testing.T, r *metaSwapRig) metaSwapOutcome {
		res, err := r.s.Promote(r.sess, PromoteRequest{PiVersion: testPi})
		return metaSwapOutcome{promoted: res.Promoted, reason: res.Reason, err: err}
	}, func(t *testing.T, sw string, got metaSwapOutcome, _ []byte) {
		// Resolved from A's gen 1: a key whose record at its name is no
		// longer that is a key made anew (superseded); one whose meta.db
		// cannot be read, or whose dir moved, fails.
		want := gates.PromoteFailed
		switch sw {
		case "another key's meta.db", "made anew", "unlinked":
			want = gates.Superseded
		}
		if got.promoted || got.reason != want || (want == gates.PromoteFailed) != (got.err != nil) {
			t.Fatalf("promote = %v %s, %v; want %s", got.promoted, got.reason, got.err, want)
		}
	}},
	{"roll forward", func(t *testing.T, r *metaSwapRig) metaSwapOutcome {
		_, err := r.s.RollForward(testKey)
		return metaSwapOutcome{err: err}
	}, func(t *testing.T, sw string, got metaSwapOutcome, _ []byte) {
		// Nothing pending: an error is for a meta.db that cannot be read
		// and a dir moved or gone; the rest is nothing to do.
		switch sw {
		case "another key's meta.db", "made anew", "unlinked":
			if got.err != nil {
				t.Fatalf("roll forward: %v", got.err)
			}
		default:
			if got.err == nil {
				t.Fatal("roll forward after a swap to what is not its meta.db: no error")
			}
		}
	}},
	{"repair", func(t *testing.T, r *metaSwapRig) metaSwapOutcome {
		var out metaSwapOutcome
		_, out.err = r.s.Check(context.Background(), CheckOptions{Repair: true}, func(f Finding) error { return nil })
		return out
	}, func(t *testing.T, sw string, got metaSwapOutcome, _ []byte) {
		if got.err != nil {
			t.Fatalf("check --repair: %v", got.err)
		}
	}},
}

// The meta.db of a key replaced inside an open of it, between the openat
// and the flock (db-open/before-flock): renamed over by a link, a FIFO, a
// directory, a truncated copy or another key's file; unlinked, or unlinked
// and made again with its transcript by another process's first
// promotion; the key dir quarantined, or reaped. For each reader (resolve,
// dump, check) and writer (promote, roll forward, check --repair):
//
//   - the open takes the file now at the name (it retries, at most twice,
//     when the file it opened is no longer there), and the operation says a named
//     reason within its lock timeout: never a crash, a hang or a resume of
//     bytes no record describes;
//   - nothing is written through the link (its target is unchanged), and
//     the meta.db that was replaced, held open by the test, is unchanged
//     byte for byte: no commit lands in a meta.db no longer at the key's
//     name; a quarantine dir is left as it was moved;
//   - a resolve after it resumes only what the record at the key's name
//     describes.
//
// One test per operation, each swap a subtest.
func TestMetaDBSwapInsideItsOpenDuringResolve(t *testing.T) { metaSwapInsideOpen(t, "resolve") }
func TestMetaDBSwapInsideItsOpenDuringDump(t *testing.T)    { metaSwapInsideOpen(t, "dump") }
func TestMetaDBSwapInsideItsOpenDuringCheck(t *testing.T)   { metaSwapInsideOpen(t, "check") }
func TestMetaDBSwapInsideItsOpenDuringPromote(t *testing.T) { metaSwapInsideOpen(t, "promote") }
func TestMetaDBSwapInsideItsOpenDuringRollForward(t *testing.T) {
	metaSwapInsideOpen(t, "roll forward")
}
func TestMetaDBSwapInsideItsOpenDuringRepair(t *testing.T) { metaSwapInsideOpen(t, "repair") }

// Where the file system forgets a dir once it is removed (an fstat of its
// descriptor fails: ESTALE over NFS, ENOENT from a FUSE daemon that works
// by path), a key reaped inside a read's open is still absent to resolve
// and dump, as on a local disk (a writer's open fails there before it
// asks: its meta.db is gone too). On go-fuse's loopback the resolve
// failed, "resolve KEY: fstat KEYDIR: no such file or directory".
func TestAKeyReapedInsideAnOpenWhereRemovedDirsAreForgotten(t *testing.T) {
	defer func(f func(*os.File) (unix.Stat_t, error)) { fstatHeld = f }(fstatHeld)
	for _, errno := range []unix.Errno{unix.ENOENT, unix.ESTALE} {
		fstatHeld = func(f *os.File) (unix.Stat_t, error) {
			st, err := fsat.Fstat(f)
			if err == nil && st.Nlink == 0 || fsat.IsGone(err) {
				return unix.Stat_t{}, &os.PathError{Op: "fstat", Path: f.Name(), Err: errno}
			}
			return st, err
		}
		t.Run(errno.Error(), func(t *testing.T) {
			for _, op := range []string{"resolve", "dump", "promote", "repair"} {
				metaSwapInsideOpen(t, op, "reaped")
			}
		})
	}
}

// metaSwapInsideOpen runs opName under each swap of metaSwaps, or of
// only those named.
func metaSwapInsideOpen(t *testing.T, opName string, only ...string) {
	other := madeAnew(t)
	bBytes, err := os.ReadFile(filepath.Join(other, TranscriptName))
	must(t, err)
	for _, op := range metaSwapOps {
		if op.name != opName {
			continue
		}
		for _, sw := range metaSwaps {
			if len(only) > 0 && !slices.Contains(only, sw.name) {
				continue
			}
			t.Run(op.name+"/"+sw.name, func(t *testing.T) {
				r := newMetaSwapRig(t, other)
				savedWas := treeState(t, r.saved)
				r.arm(t, faults.DBOpenBeforeLock, sw)
				start := time.Now()
				got := op.run(t, r)
				took := time.Since(start)
				faults.Set(nil)
				if !r.swapDone {
					t.Fatal("no open reached db-open/before-flock")
				}
				if took > r.s.opts.LockTimeout+time.Second {
					t.Fatalf("%s took %v, past its lock timeout", op.name, took)
				}
				op.want(t, sw.name, got, bBytes)
				if treeState(t, r.saved) != savedWas {
					t.Fatal("written through the link at meta.db")
				}
				now := make([]byte, len(r.heldWas)+1)
				n, _ := r.held.ReadAt(now, 0)
				if !bytes.Equal(now[:n], r.heldWas) {
					t.Fatal("the meta.db replaced in the open changed: a commit no longer at the key's name")
				}
				if r.quarDir != "" {
					if e := entriesOf(t, r.quarDir); !strings.Contains(e, db.FileName) || !strings.Contains(e, TranscriptName) || strings.Count(e, "\n") != 2 {
						t.Fatalf("the quarantine dir holds\n%s", e)
					}
				}
				checkDescribed(t, r.s, r.root, testKey)
			})
		}
	}
}
