package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"sessdb/db"
	"sessdb/gates"
	"sessdb/internal/faults"
)

// A promotion that opened a legacy key's dir (no meta.db) and waited for
// the key's lock while check --repair --quarantine held it (on a meta.db
// the quarantine made for its lock, unlinked again in the dir moved aside)
// must leave the quarantine dir as it was moved. Its open, finding no
// meta.db once it had the lock of the one unlinked, made one again, in the
// dir moved aside.
func TestQuarantineOfALegacyKeyLeavesNoMetaDBOfAWaitingPromotion(t *testing.T) {
	root := filepath.Join(t.TempDir(), "sessions")
	var armed atomic.Bool
	var hook func()
	s, err := New(root, Options{LockTimeout: 5 * time.Second, Now: func() time.Time {
		if armed.CompareAndSwap(true, false) {
			hook()
		}
		return quarantineNow
	}})
	if err != nil {
		t.Fatal(err)
	}
	writeLegacy(t, root, testKey, map[string]string{
		TranscriptName: string(transcriptBytes(quarantineNow, "legacy")),
		"pi-version":   testPi,
	})
	sess, jobDir := mustResolve(t, s, testKey, localJob())
	want(t, sess, true, gates.Resumed)
	stage(t, jobDir, append(staged(t, jobDir), entryLine("two")...))
	type promoted struct {
		res PromoteResult
		err error
	}
	done := make(chan promoted, 1)
	hook = func() {
		go func() {
			res, err := s.Promote(sess, PromoteRequest{PiVersion: testPi})
			done <- promoted{res, err}
		}()
		waitForStack(t, "sessdb/db.lockKey") // the promotion waits for the quarantine's lock
	}
	before := entriesOf(t, filepath.Join(root, testKey))
	armed.Store(true)
	aside, err := s.Quarantine(testKey)
	if err != nil {
		t.Fatal(err)
	}
	p := <-done
	if p.err == nil || p.res.Promoted {
		t.Fatalf("the waiting promotion = %+v, %v; want it failed", p.res, p.err)
	}
	if got := entriesOf(t, filepath.Join(root, aside)); got != before {
		t.Fatalf("the quarantine dir holds\n%s\nwant the legacy key as it was moved:\n%s", got, before)
	}
	if _, err := os.Lstat(filepath.Join(root, testKey)); err == nil {
		t.Fatal("the key dir is back after its quarantine")
	}
}

// A promotion that waited for the lock of a quarantine of a key whose
// meta.db is of an older schema must leave that meta.db as it was moved:
// its open migrated the schema (since 5bc548c the first write does, after
// Begin's own look), a commit in the dir moved aside, before the
// promotion saw that the dir was no longer at the key's name.
func TestQuarantineOfAnOlderSchemaKeyIsNotMigratedByAWaitingPromotion(t *testing.T) {
	s, root, quarantine := quarantineWithAWaiter(t)
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "one")
	sess, jobDir := mustResolve(t, s, testKey, localJob())
	want(t, sess, true, gates.Resumed)
	stage(t, jobDir, append(staged(t, jobDir), entryLine("two")...))
	chkWriteRaw(t, root, testKey, "meta", "schema", []byte{1}) // schema 1, in msgpack
	type promoted struct {
		res PromoteResult
		err error
	}
	done := make(chan promoted, 1)
	aside, before := quarantine(func() {
		res, err := s.Promote(sess, PromoteRequest{PiVersion: testPi})
		done <- promoted{res, err}
	})
	p := <-done
	if p.err == nil || p.res.Promoted {
		t.Fatalf("the waiting promotion = %+v, %v; want it failed", p.res, p.err)
	}
	if after := treeState(t, filepath.Join(root, aside)); after != before {
		t.Fatalf("the quarantine dir changed under the promotion:\n%s\nwas\n%s", after, before)
	}
}

// The A,B,A swap inside the meta.db open itself (db.OpenReader and
// OpenWriter, between the key dir's fstat and the openat of meta.db, and
// between that openat and the flock): §6.1's gap. The open works from the
// key dir's descriptor, so a resolve still resumes A's bytes at A's
// generation, and nothing of B is opened (inotify), locked or changed.
func TestKeyDirSwapInsideTheMetaOpenDuringResolve(t *testing.T) {
	cases := []struct {
		layout Layout
		c      swapCase
	}{
		{LayoutDB, swapCase{swap: faults.DBOpenBeforeMeta}},
		{LayoutDB, swapCase{swap: faults.DBOpenBeforeLock}},
		{LayoutDB, swapCase{swap: faults.DBOpenBeforeMeta, back: faults.DBOpenBeforeLock}},
	}
	for _, kind := range []string{"link", "dir"} {
		for _, c := range cases {
			t.Run(fmt.Sprintf("%s/%s/%s", kind, c.layout, c.c.name()), func(t *testing.T) { resolveSwap(t, kind, c.layout, c.c) })
		}
	}
}

// The same for a legacy key, whose open finds no meta.db.
func TestKeyDirSwapInsideTheMetaOpenDuringResolveOfALegacyKey(t *testing.T) {
	for _, kind := range []string{"link", "dir"} {
		t.Run(kind, func(t *testing.T) { resolveSwap(t, kind, LayoutLegacy, swapCase{swap: faults.DBOpenBeforeMeta}) })
	}
}

// The same for a promotion's open (Begin): swapped one way, the promotion
// is refused, A and B are left as they were (for a legacy A, no meta.db is
// made in it: the open's create is where it would be), and the key's name
// still resolves; swapped back (A,B,A) before the flock, it lands in A.
func TestKeyDirSwapInsideTheMetaOpenDuringPromote(t *testing.T) {
	promoteSwapInsideOpen(t, LayoutDB, []swapCase{
		{swap: faults.DBOpenBeforeMeta},
		{swap: faults.DBOpenBeforeLock},
		{swap: faults.DBOpenBeforeMeta, back: faults.DBOpenBeforeLock},
	})
}

// The same for a legacy key's first promotion, whose open makes meta.db.
func TestKeyDirSwapInsideTheMetaOpenDuringPromoteOfALegacyKey(t *testing.T) {
	promoteSwapInsideOpen(t, LayoutLegacy, []swapCase{{swap: faults.DBOpenBeforeMeta}})
}

func promoteSwapInsideOpen(t *testing.T, layout Layout, swaps []swapCase) {
	type layoutCase struct {
		layout Layout
		c      swapCase
	}
	var cases []layoutCase
	for _, c := range swaps {
		cases = append(cases, layoutCase{layout, c})
	}
	for _, kind := range []string{"link", "dir"} {
		for _, c := range cases {
			t.Run(fmt.Sprintf("%s/%s/%s", kind, c.layout, c.c.name()), func(t *testing.T) {
				r := newSwapRig(t, kind, c.layout)
				sess, jobDir := mustResolve(t, r.s, r.key, localJob())
				want(t, sess, true, gates.Resumed)
				next := append(staged(t, jobDir), entryLine("A: the run that is promoted")...)
				stage(t, jobDir, next)
				var res PromoteResult
				var err error
				aBefore, bBefore := r.during(c.c, func(fault func(faults.Point) error) {
					faults.Set(fault)
					res, err = r.s.Promote(sess, PromoteRequest{PiVersion: testPi})
					faults.Set(nil)
				})
				if after := r.state(r.bDir()); after != bBefore {
					t.Fatalf("B changed:\n%s\n---\n%s", bBefore, after)
				}
				if c.c.back == "" {
					if err == nil || res.Promoted || res.Reason != gates.PromoteFailed {
						t.Fatalf("promote into a key dir moved aside inside its open = %+v, %v; want promote-failed", res, err)
					}
					if after := r.state(r.aDir()); after != aBefore {
						t.Fatalf("the refused promotion changed A:\n%s\n---\n%s", aBefore, after)
					}
					r.laterResolvesAreConsistent(r.a, r.aGen)
					return
				}
				if err != nil || !res.Promoted || res.Gen != r.aGen+1 {
					t.Fatalf("promote = %+v, %v; want promoted at gen %d", res, err, r.aGen+1)
				}
				r.laterResolvesAreConsistent(next, r.aGen+1)
			})
		}
	}
}

// TestReapOfAKeyQuarantinedBeforeItsLock for a key whose meta.db holds
// nothing (the lock file a killed first promotion of a legacy key left):
// the reap, finding the dir moved aside once it had the lock, must leave
// the quarantine dir as it was moved, that meta.db included; it is not the
// one a reap's own open made.
func TestReapOfAQuarantinedKeyLeavesItsEmptyMetaDB(t *testing.T) {
	s, root, clock := newTestStore(t, gates.Bounds{TTL: opsTTL})
	writeLegacy(t, root, testKey, map[string]string{
		TranscriptName: string(transcriptBytes(clock.now, "legacy")),
		"pi-version":   testPi,
	})
	old := clock.now.Add(-30 * 24 * time.Hour)
	kd, err := os.Open(filepath.Join(root, testKey))
	if err != nil {
		t.Fatal(err)
	}
	d, err := db.OpenWriter(kd, filepath.Join(root, testKey, db.FileName), db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	d.Close()
	kd.Close()
	if err := os.Chtimes(filepath.Join(root, testKey, TranscriptName), old, old); err != nil {
		t.Fatal(err)
	}
	var aside, before string
	var once sync.Once
	faults.Set(func(p faults.Point) error {
		if p == faults.ReapBeforeLock {
			once.Do(func() {
				var err error
				if aside, err = s.Quarantine(testKey); err != nil {
					t.Error(err)
				}
				before = entriesOf(t, filepath.Join(root, aside))
			})
		}
		return nil
	})
	res, err := s.Reap(false)
	faults.Set(nil)
	if aside == "" {
		t.Fatalf("reap = %+v, %v; it never reached its lock", res, err)
	}
	if len(res.Removed) != 0 {
		t.Errorf("reap = %+v, %v; removed a key it did not hold", res, err)
	}
	if after := entriesOf(t, filepath.Join(root, aside)); after != before {
		t.Errorf("the quarantine dir changed under the reap:\n%s\nwas\n%s", after, before)
	}
}

// dump and check, the other readers, with the key dir swapped inside
// their meta.db open, one way and A,B,A: dump reports A's record (the
// descriptor pins A), check completes; neither opens, locks or changes B.
// B is a link's target outside the root, so that the walk of the root
// never meets B by a name of its own.
func TestKeyDirSwapInsideTheMetaOpenDuringDumpAndCheck(t *testing.T) {
	cases := []swapCase{
		{swap: faults.DBOpenBeforeMeta},
		{swap: faults.DBOpenBeforeLock},
		{swap: faults.DBOpenBeforeMeta, back: faults.DBOpenBeforeLock},
	}
	for _, c := range cases {
		t.Run("dump/"+c.name(), func(t *testing.T) {
			r := newSwapRig(t, "link", LayoutDB)
			var got KeyReport
			var err error
			aBefore, bBefore := r.during(c, func(fault func(faults.Point) error) {
				faults.Set(fault)
				err = r.s.InspectWith(context.Background(), InspectOptions{Only: r.key}, func(k KeyReport) error { got = k; return nil })
				faults.Set(nil)
			})
			if err != nil || got.Gen != r.aGen || got.MetaError != "" || got.Verdict == nil || got.Verdict.Reason != string(gates.Resumed) && got.Verdict.Reason != Undetermined {
				t.Fatalf("dump = gen %d, meta error %q, verdict %+v, %v; want A's record (gen %d)", got.Gen, got.MetaError, got.Verdict, err, r.aGen)
			}
			if after := r.state(r.bDir()); after != bBefore {
				t.Fatalf("B changed:\n%s\n---\n%s", bBefore, after)
			}
			if after := r.state(r.aDir()); after != aBefore {
				t.Fatalf("dump changed A:\n%s\n---\n%s", aBefore, after)
			}
		})
		t.Run("check/"+c.name(), func(t *testing.T) {
			r := newSwapRig(t, "link", LayoutDB)
			var err error
			var findings []Finding
			aBefore, bBefore := r.during(c, func(fault func(faults.Point) error) {
				faults.Set(fault)
				_, err = r.s.Check(context.Background(), CheckOptions{}, func(f Finding) error { findings = append(findings, f); return nil })
				faults.Set(nil)
			})
			if err != nil {
				t.Fatalf("check: %v", err)
			}
			for _, f := range findings {
				if f.Kind == KindLocked || f.Kind == KindUnreadable {
					t.Fatalf("check found %s at %s: %s", f.Kind, f.Path, f.Detail)
				}
			}
			if after := r.state(r.bDir()); after != bBefore {
				t.Fatalf("B changed:\n%s\n---\n%s", bBefore, after)
			}
			if after := r.state(r.aDir()); after != aBefore {
				t.Fatalf("check changed A:\n%s\n---\n%s", aBefore, after)
			}
		})
	}
}

// A roll forward (the next writer's, check --repair's, a migration's) of
// a promotion committed and not yet renamed, with the key dir swapped
// inside its meta.db open: one way, it refuses and leaves A as it was (the
// pending promotion still there for a writer that holds A at the key's
// name); A,B,A, it settles the promotion in A, which then resumes it. B is
// never opened, locked or changed.
func TestKeyDirSwapInsideTheMetaOpenDuringRollForward(t *testing.T) {
	cases := []swapCase{
		{swap: faults.DBOpenBeforeMeta},
		{swap: faults.DBOpenBeforeLock},
		{swap: faults.DBOpenBeforeMeta, back: faults.DBOpenBeforeLock},
	}
	for _, kind := range []string{"link", "dir"} {
		for _, c := range cases {
			t.Run(kind+"/"+c.name(), func(t *testing.T) {
				r := newSwapRig(t, kind, LayoutDB)
				sess, jobDir := mustResolve(t, r.s, r.key, localJob())
				next := append(staged(t, jobDir), entryLine("A: committed, not renamed")...)
				stage(t, jobDir, next)
				faults.Set(func(p faults.Point) error {
					if p == faults.PromoteAfterCommit {
						return errors.New("stopped after the commit")
					}
					return nil
				})
				_, err := r.s.Promote(sess, PromoteRequest{PiVersion: testPi})
				faults.Set(nil)
				if err == nil {
					t.Fatal("the promotion was not stopped after its commit")
				}
				var settled bool
				aBefore, bBefore := r.during(c, func(fault func(faults.Point) error) {
					faults.Set(fault)
					settled, err = r.s.RollForward(r.key)
					faults.Set(nil)
				})
				if after := r.state(r.bDir()); after != bBefore {
					t.Fatalf("B changed:\n%s\n---\n%s", bBefore, after)
				}
				if c.back == "" {
					if err == nil || settled {
						t.Fatalf("roll forward in a key dir moved aside inside its open = %v, %v; want refused", settled, err)
					}
					if after := r.state(r.aDir()); after != aBefore {
						t.Fatalf("the refused roll forward changed A:\n%s\n---\n%s", aBefore, after)
					}
					r.toA()
				} else if err != nil || !settled {
					t.Fatalf("roll forward = %v, %v; want the promotion settled in A", settled, err)
				}
				r.laterResolvesAreConsistent(next, r.aGen+1)
			})
		}
	}
}

// check --repair's deep check (DeepCheckDB, in sessdb a child process)
// opens the key dir by its name, while the check holds the dir it opened
// first: with B (a dir whose meta.db is damaged) at the key's name while
// the deep check runs and A back before the repair (A,B,A), B's damage is
// no proof about A's meta.db, which must not be reported as failing
// bbolt's check, nor moved aside.
func TestDeepCheckOfASwappedKeyDirProvesNothing(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "A")
	a := filepath.Join(root, testKey)
	aside := filepath.Join(t.TempDir(), "a")
	b := filepath.Join(t.TempDir(), "b")
	must(t, os.Mkdir(b, 0o700))
	must(t, os.WriteFile(filepath.Join(b, db.FileName), bytes.Repeat([]byte("not a bbolt file "), 512), 0o600))
	before := treeState(t, a)
	deep := func(_ context.Context, key string) (DeepResult, error) {
		must(t, os.Rename(a, aside))
		must(t, os.Rename(b, a))
		defer func() {
			must(t, os.Rename(a, b))
			must(t, os.Rename(aside, a))
		}()
		return s.DeepCheckDB(key), nil
	}
	var found []Finding
	if _, err := s.Check(context.Background(), CheckOptions{Repair: true, DeepCheck: deep}, func(f Finding) error {
		found = append(found, f)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for _, f := range found {
		if f.Kind == KindMetaCheckFailed && !strings.Contains(f.Detail, "proves nothing") || f.Kind == KindMovedAside {
			t.Errorf("check --repair: %s %s: %s; %s", f.Kind, f.Path, f.Detail, f.Repair)
		}
	}
	if after := treeState(t, a); after != before {
		t.Fatalf("A changed:\n%s\nwas\n%s", after, before)
	}
	sess, _ := checkDescribed(t, s, root, testKey)
	want(t, sess, true, gates.Resumed)
}
