package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"sessdb/db"
	"sessdb/gates"
	"sessdb/internal/durable"
	"sessdb/internal/faults"
	"sessdb/internal/fsat"
)

// Tests a mutation sweep of the store's audit and repair side showed
// missing (notes of helper mutstore): each holds a promise of check,
// accept, dump, stats or reap that no other store test held the code to.

// What check --accept reports it recorded is the transcript in place: its
// size and CRC32C, in the result and in the finding's line, for every
// outcome (recorded, already recorded).
func TestAcceptSaysTheSizeAndChecksumItRecorded(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "one")
	edited := append(readCanonical(t, root, testKey), entryLine("edited out of band")...)
	if err := os.WriteFile(filepath.Join(root, testKey, TranscriptName), edited, 0o600); err != nil {
		t.Fatal(err)
	}
	size, sum := int64(len(edited)), Checksum(crc32.Checksum(edited, castagnoli))
	says := fmt.Sprintf("(%d bytes, CRC32C %s)", size, sum)
	found := checkFindings(t, s, CheckOptions{Repair: true, Accept: testKey})
	if f := chkFind(found, testKey+"/"+TranscriptName, KindAccepted); f == nil || !f.Repaired || !strings.Contains(f.Repair, says) {
		t.Fatalf("the accepted finding does not say %q: %+v", says, found)
	}
	res, err := s.Accept(testKey)
	if err != nil || !res.Already || res.Bytes != size || res.CRC32C != sum {
		t.Fatalf("accept again = %+v, %v; want already, %d bytes, CRC32C %s", res, err, size, sum)
	}
}

// Accept writes nothing into a meta.db one of whose meta pages is invalid:
// bbolt reads it at the older commit, so a record written there would
// drop what the newer one held. check --repair moves it aside first.
func TestAcceptRefusesAMetaDBWithAnInvalidMetaPage(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "one")
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "two")
	edited := append(readCanonical(t, root, testKey), entryLine("edited out of band")...)
	if err := os.WriteFile(filepath.Join(root, testKey, TranscriptName), edited, 0o600); err != nil {
		t.Fatal(err)
	}
	zeroNewestMetaPage(t, root, testKey)
	before := treeState(t, root)
	if res, err := s.Accept(testKey); !errors.Is(err, ErrNotAccepted) || !strings.Contains(err.Error(), "meta-page-invalid") {
		t.Fatalf("accept of a meta.db with its newest meta page zeroed = %+v, %v; want ErrNotAccepted naming meta-page-invalid", res, err)
	}
	if treeState(t, root) != before {
		t.Fatal("a refused accept wrote something")
	}
	// What it sends the operator to: check --repair, which writes such a
	// page again where the other describes the transcript, and moves
	// meta.db aside only where it does not (as here).
	if _, err := s.Accept(testKey); err == nil || !strings.Contains(err.Error(), "writes the page again") || !strings.Contains(err.Error(), "moves meta.db aside") {
		t.Fatalf("accept's refusal %v; want it to name both outcomes of check --repair", err)
	}
	found, _ := chkRun(t, s, true)
	if f := chkFind(found, testKey+"/"+db.FileName, KindMetaPageInvalid); f == nil || !strings.Contains(f.Repair, "moved meta.db aside") {
		t.Fatalf("check --repair: %+v; want meta.db moved aside, its valid page not describing the edited transcript", found)
	}
}

// replaceMetaDB puts a copy of dir's meta.db at its name (as a writer
// gives a hard-linked one a file of its own): the same records, another
// file.
func replaceMetaDB(t *testing.T, dir string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, db.FileName))
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, "copy"), b, 0o600)
	}
	if err == nil {
		err = os.Rename(filepath.Join(dir, "copy"), filepath.Join(dir, db.FileName))
	}
	if err != nil {
		t.Error(err)
	}
}

// A quarantine whose meta.db is replaced while it takes the lock tries
// again, lockAttempts times in all: replaced before each of the first
// lockAttempts-1 locks it is still done, holding no descriptor of a file
// it let go; replaced before every lock it is refused, the key left at
// its name.
func TestQuarantineTriesTheLockAsManyTimesAsItSays(t *testing.T) {
	for _, replaced := range []int{lockAttempts - 1, lockAttempts} {
		t.Run(fmt.Sprint(replaced), func(t *testing.T) {
			s, root, _ := newTestStore(t, gates.Bounds{})
			runJob(t, s, testKey, localJob(), PromoteRequest{}, "first")
			dir := filepath.Join(root, testKey)
			var tries int
			faults.Set(func(p faults.Point) error {
				if p == faults.QuarantineBeforeLock {
					if tries++; tries <= replaced {
						replaceMetaDB(t, dir)
					}
				}
				return nil
			})
			defer faults.Set(nil)
			fds := openFDs(t)
			aside, err := s.Quarantine(testKey)
			faults.Set(nil)
			if now := openFDs(t); now != fds {
				t.Errorf("%d descriptors open after the quarantine, %d before", now, fds)
			}
			if replaced < lockAttempts {
				if err != nil || tries != replaced+1 {
					t.Fatalf("quarantine with meta.db replaced %d times = %q, %v after %d tries; want done at try %d", replaced, aside, err, tries, replaced+1)
				}
				if _, err := os.Lstat(filepath.Join(root, aside, TranscriptName)); err != nil {
					t.Fatalf("the quarantine dir has no transcript: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), "replaced while it was being locked") || tries != lockAttempts {
				t.Fatalf("quarantine with meta.db replaced before every lock = %q, %v after %d tries; want refused after %d", aside, err, tries, lockAttempts)
			}
			if _, err := os.Lstat(filepath.Join(dir, TranscriptName)); err != nil {
				t.Fatalf("the refused quarantine moved the key: %v", err)
			}
		})
	}
}

// zeroNewestMetaPage zeroes the newest of key's two meta pages: bbolt
// falls back to the older commit, check finds meta-page-invalid.
func zeroNewestMetaPage(t *testing.T, root, key string) {
	t.Helper()
	m := chkMeta(t, root, key)
	f, err := os.OpenFile(chkDB(root, key), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(make([]byte, m.PageSize), int64(m.Active*m.PageSize)); err != nil {
		t.Fatal(err)
	}
}

// Every audit and repair closes what it opens: a walk over a store of
// thousands of keys must not run out of descriptors (a leak of one per key,
// left to the garbage collector, is EMFILE at the default limit of 1024
// long before a walk of 10,000 keys ends). Each run leaves the process
// with the descriptors it had, over keys of every state: whole, edited,
// pending, damaged (opened on its older commit, or not opened at all),
// with temps, expired, and a reap's dir left behind.
func TestAuditsLeaveNoDescriptorOpen(t *testing.T) {
	s, root, clock := newTestStore(t, gates.Bounds{TTL: opsTTL})
	expiredKey(t, s, clock, Key("github", "a/b", "expired"))
	interrupted := Key("github", "a/b", "interrupted")
	expiredKey(t, s, clock, interrupted)
	faults.Set(func(p faults.Point) error {
		if p == faults.ReapAfterRename {
			return errors.New("killed")
		}
		return nil
	})
	s.Reap(false)
	faults.Set(nil)
	if aside, _ := filepath.Glob(filepath.Join(root, ReapedPrefix+interrupted+"-*")); len(aside) != 1 {
		t.Fatalf("the fixture: %d reap-owned dirs, want 1", len(aside))
	}
	whole := Key("github", "a/b", "whole")
	runJob(t, s, whole, localJob(), PromoteRequest{Tokens: tok(5), Window: 10}, "one")
	edited := Key("github", "a/b", "edited")
	runJob(t, s, edited, localJob(), PromoteRequest{}, "one")
	if err := os.WriteFile(filepath.Join(root, edited, TranscriptName), append(readCanonical(t, root, edited), entryLine("out of band")...), 0o600); err != nil {
		t.Fatal(err)
	}
	pendingDamage(t, s, root, chkKey(t, s, "pending"))
	damaged := chkKey(t, s, "damaged")
	zeroNewestMetaPage(t, root, damaged)
	if err := os.Truncate(chkDB(root, chkKey(t, s, "unopened")), 0); err != nil {
		t.Fatal(err)
	}
	temps := chkKey(t, s, "temps")
	chkOldFile(t, filepath.Join(root, temps, ".current.jsonl.tmp-0123456789abcdef"), clock.now.Add(-2*time.Hour))
	chkOldFile(t, filepath.Join(root, temps, ".meta.db.tmp-0123456789abcdef"), clock.now.Add(-2*time.Hour))

	deep := func(_ context.Context, key string) (DeepResult, error) { return s.DeepCheckDB(key), nil }
	ctx := context.Background()
	for _, op := range []struct {
		name string
		run  func() error
	}{
		{"check --deep", func() error { _, err := s.Check(ctx, CheckOptions{DeepCheck: deep}, nil); return err }},
		{"dump --verify --history", func() error {
			return s.InspectWith(ctx, InspectOptions{Verify: true, History: 10, Job: &Job{}}, func(KeyReport) error { return nil })
		}},
		{"stats", func() error { _, err := s.Stats(ctx, StatsOptions{Window: time.Hour}); return err }},
		{"reap --dry-run", func() error { _, err := s.Reap(true); return err }},
		{"check --repair --deep", func() error { _, err := s.Check(ctx, CheckOptions{Repair: true, DeepCheck: deep}, nil); return err }},
		{"check --repair --accept", func() error { _, err := s.Check(ctx, CheckOptions{Repair: true, Accept: edited}, nil); return err }},
		{"check --repair --quarantine", func() error { _, err := s.Check(ctx, CheckOptions{Repair: true, Quarantine: whole}, nil); return err }},
		{"reap", func() error { _, err := s.Reap(false); return err }},
	} {
		fds := openFDs(t)
		if err := op.run(); err != nil {
			t.Fatalf("%s: %v", op.name, err)
		}
		if now := openFDs(t); now != fds {
			t.Errorf("%s: %d descriptors open after it, %d before", op.name, now, fds)
		}
	}
}

// rootSyncFails is the disk on which every fsync of the sessions root
// fails: a key dir renamed there is not durable.
type rootSyncFails struct {
	durable.Disk
	root string
}

func (d rootSyncFails) SyncDir(dir *os.File) error {
	if filepath.Clean(dir.Name()) == filepath.Clean(d.root) {
		return &os.PathError{Op: "fsync", Path: dir.Name(), Err: unix.EIO}
	}
	return d.Disk.SyncDir(dir)
}

// A quarantine whose move of the key dir could not be made durable says
// so: a power cut may undo it, and check --quarantine must not report it
// done.
func TestAQuarantineNotMadeDurableFails(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "one")
	s.disk = diskWrites{rootSyncFails{root: root}}
	found := checkFindings(t, s, CheckOptions{Repair: true, Quarantine: testKey})
	q := chkFind(found, testKey, KindQuarantined)
	if q == nil || q.Repaired || !strings.Contains(q.Repair, "input/output error") {
		t.Fatalf("check --quarantine whose move was not made durable: %+v; want not repaired, naming the fsync's error", found)
	}
}

// A history at the last sequence number is numbered again in place only
// in a meta.db sound in all else: where the deep check proved damage
// too, the file is moved aside whole (the repair neither writes into a
// damaged file nor leaves it in place).
func TestAHistoryAtTheLastSequenceNumberInADamagedFileGoesAside(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "one")
	atTheLastSequenceNumber(t, root, testKey)
	found := chkRunDeep(t, s, testKey, DeepResult{Problems: []string{"page 9 unreachable"}})
	path := testKey + "/" + db.FileName
	full, deep := chkFind(found, path, KindRecordUndecodable), chkFind(found, path, KindMetaCheckFailed)
	if full == nil || deep == nil || !strings.Contains(full.Repair, "moved meta.db aside") || !strings.Contains(deep.Repair, "moved meta.db aside") {
		t.Fatalf("check --repair: %+v; want both findings' meta.db moved aside", found)
	}
	if aside, _ := filepath.Glob(filepath.Join(root, testKey, AsidePrefix+"*")); len(aside) != 1 {
		t.Fatalf("%d files moved aside, want 1", len(aside))
	}
}

// A repair that leaves meta.db alone does not run the key's deep check
// again for the look after it (a check that hangs would cost its timeout
// once more per key), also when the deep check cannot name the file.
func TestARepairThatLeavesMetaDBAloneRunsTheDeepCheckOnce(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "one")
	if err := os.WriteFile(filepath.Join(root, testKey, TranscriptName), append(readCanonical(t, root, testKey), entryLine("edited")...), 0o600); err != nil {
		t.Fatal(err)
	}
	runs := 0
	deep := func(context.Context, string) (DeepResult, error) { runs++; return DeepResult{}, nil }
	found := checkFindings(t, s, CheckOptions{Repair: true, DeepCheck: deep})
	if f := chkFind(found, testKey+"/"+TranscriptName, KindTranscriptMismatch); f == nil || f.Repaired {
		t.Fatalf("the fixture: %+v; want a mismatch left as is", found)
	}
	if runs != 1 {
		t.Fatalf("the deep check ran %d times; meta.db was not touched, so once", runs)
	}
}

// interruptedReap reaps key, expired, killed once its dir is at its
// reap-owned name, and returns that dir.
func interruptedReap(t *testing.T, s *Store, root string, clock *testClock, key string) string {
	t.Helper()
	expiredKey(t, s, clock, key)
	faults.Set(func(p faults.Point) error {
		if p == faults.ReapAfterRename {
			return errors.New("killed")
		}
		return nil
	})
	s.Reap(false)
	faults.Set(nil)
	aside, _ := filepath.Glob(filepath.Join(root, ReapedPrefix+key+"-*"))
	if len(aside) != 1 {
		t.Fatalf("the fixture: %d reap-owned dirs, want 1", len(aside))
	}
	return aside[0]
}

// What is not the store's in a dir an interrupted reap left (a file put
// there since) is never removed: neither the next reap nor check --repair
// removes the dir, and each names the entry.
func TestAReapsLeftoverHoldingAForeignEntryIsLeftWhole(t *testing.T) {
	s, root, clock := newTestStore(t, gates.Bounds{TTL: opsTTL})
	dir := interruptedReap(t, s, root, clock, testKey)
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("mine"), 0o600); err != nil {
		t.Fatal(err)
	}
	before := treeState(t, root)
	res, err := s.Reap(false)
	if err != nil || len(res.Finished) != 0 || !strings.Contains(res.Skipped[filepath.Base(dir)], `"notes.txt" is a regular file`) {
		t.Fatalf("reap = %+v, %v; want the leftover skipped, naming notes.txt", res, err)
	}
	found := checkFindings(t, s, CheckOptions{Repair: true})
	if f := chkFind(found, filepath.Base(dir), KindReapInterrupted); f == nil || f.Repaired || !f.Remains || !strings.Contains(f.Repair, `"notes.txt" is a regular file`) {
		t.Fatalf("check --repair: %+v; want the leftover not repaired, naming notes.txt", found)
	}
	if got := treeState(t, root); got != before {
		t.Fatalf("the leftover changed:\n%s\nwas\n%s", got, before)
	}
}

// A repair that numbered a history again wrote meta.db: the look after it
// judges the file again with the deep check, not by the first verdict,
// which was about the file before the commit.
func TestARenumberingRepairRunsTheDeepCheckAgain(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "one")
	atTheLastSequenceNumber(t, root, testKey)
	runs := 0
	deep := func(context.Context, string) (DeepResult, error) { runs++; return DeepResult{}, nil }
	found := checkFindings(t, s, CheckOptions{Repair: true, DeepCheck: deep})
	if f := chkFind(found, testKey+"/"+db.FileName, KindRecordUndecodable); f == nil || !f.Repaired {
		t.Fatalf("the fixture: %+v; want the history numbered again", found)
	}
	if runs != 2 {
		t.Fatalf("the deep check ran %d times; the renumber committed to meta.db, so twice", runs)
	}
}

// check --repair of a pending promotion whose temp is not what its record
// says (torn) says it removed the temp and left the record pending; the
// transcript in place, the generation before, is untouched.
func TestARepairOfATornPendingTempSaysWhatItDid(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "before")
	held := readCanonical(t, root, testKey)
	sess, jobDir := mustResolve(t, s, testKey, localJob())
	stage(t, jobDir, append(staged(t, jobDir), entryLine("committed")...))
	tmp := crashAfterCommit(t, s, root, sess)
	if err := os.Truncate(tmp, 10); err != nil {
		t.Fatal(err)
	}
	found := checkFindings(t, s, CheckOptions{Repair: true})
	p := chkFind(found, testKey+"/"+db.FileName, KindPendingPromotion)
	if p == nil || !p.Repaired || !strings.HasPrefix(p.Repair, "removed its temp, which did not match its record") {
		t.Fatalf("check --repair of a torn pending temp: %+v; want it to say it removed the temp", found)
	}
	if _, err := os.Lstat(tmp); !os.IsNotExist(err) {
		t.Fatalf("the torn temp is still there (%v)", err)
	}
	if !bytes.Equal(readCanonical(t, root, testKey), held) {
		t.Fatal("the transcript in place changed")
	}
}

// A repair that rolls a pending promotion forward moves meta.db aside only
// on proof about the file as its look saw it: where a promotion committed
// between the look and the repair (healing the meta page the look found
// invalid), the roll-forward hands no proof on, the file stays, and the
// key resumes its newest generation.
func TestARollForwardHandsOnNoProofAboutAFileChangedSinceTheLook(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "one")
	sess, jobDir := mustResolve(t, s, testKey, localJob())
	stage(t, jobDir, append(staged(t, jobDir), entryLine("two")...))
	crashAfterCommit(t, s, root, sess)
	m := chkMeta(t, root, testKey)
	f, err := os.OpenFile(chkDB(root, testKey), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.WriteAt(make([]byte, m.PageSize), int64((1-m.Active)*m.PageSize)) // the spare meta page
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	rootF, err := fsat.OpenDir(root)
	if err != nil {
		t.Fatal(err)
	}
	defer rootF.Close()
	found, err := s.examine(context.Background(), rootF, testKey, nil)
	if err != nil || chkFind(found, testKey+"/"+db.FileName, KindMetaPageInvalid) == nil || chkFind(found, testKey+"/"+db.FileName, KindPendingPromotion) == nil {
		t.Fatalf("examine: %v, %+v; want a pending promotion and a meta page invalid", err, found)
	}
	// A promotion lands between the look and the repair.
	if _, res := runJob(t, s, testKey, localJob(), PromoteRequest{}, "three"); res.Gen != 3 {
		t.Fatalf("promotion after the look: %+v", res)
	}
	s.repair(context.Background(), rootF, testKey, found)
	if f := chkFind(found, testKey+"/"+db.FileName, KindMetaPageInvalid); f.Repaired || !strings.Contains(f.Repair, "changed since") {
		t.Fatalf("repair of a meta.db changed since its look: %+v", f)
	}
	sess, jobDir = mustResolve(t, s, testKey, localJob())
	want(t, sess, true, gates.Resumed)
	if sess.Gen() != 3 || !bytes.Contains(staged(t, jobDir), []byte("three")) {
		t.Fatalf("resumed gen %d, want gen 3 with the newest promotion", sess.Gen())
	}
}

// dump --verify holds a transcript against the max-bytes bound as a
// resolve does: one of exactly the bound is read and resumes, one a byte
// over it is too-large unread, and a bound of one byte is a bound.
func TestDumpVerifyKeepsTheMaxBytesBoundAsResolveDoes(t *testing.T) {
	s, root, clock := newTestStore(t, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "one")
	size := int64(len(readCanonical(t, root, testKey)))
	job := localJob()
	for _, c := range []struct {
		bound  int64
		result string
		reason gates.Reason
	}{
		{size, VerifyOK, gates.Resumed},
		{size - 1, VerifyTooLarge, gates.TooLarge},
		{1, VerifyTooLarge, gates.TooLarge},
	} {
		bounded, err := New(root, Options{Bounds: gates.Bounds{MaxBytes: c.bound}, Now: clock.Now, LockTimeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		var rep KeyReport
		if err := bounded.InspectWith(context.Background(), InspectOptions{Verify: true, Job: &job}, func(r KeyReport) error { rep = r; return nil }); err != nil {
			t.Fatal(err)
		}
		sess, _ := mustResolve(t, bounded, testKey, job)
		if rep.Verify == nil || rep.Verify.Result != c.result || rep.Verdict == nil || rep.Verdict.Reason != string(c.reason) || sess.Reason != c.reason {
			t.Errorf("a %d-byte transcript, max-bytes %d: verify %+v, verdict %+v, resolve %s; want %s, %s", size, c.bound, rep.Verify, rep.Verdict, sess.Reason, c.result, c.reason)
		}
	}
}

// check --repair's sweep of a key it found without a meta.db removes only
// the meta.db its own open made for the lock: one a promotion made and
// committed into between the sweep's look and its open (which then waited
// for and locked it) holds the key's record and stays.
func TestARepairsSweepKeepsAMetaDBAPromotionMadeBeforeItsOpen(t *testing.T) {
	s, root, clock := newTestStore(t, gates.Bounds{})
	writeLegacy(t, root, testKey, map[string]string{TranscriptName: string(transcriptBytes(clock.now, "kept"))})
	chkOldFile(t, filepath.Join(root, testKey, ".current.jsonl.tmp-0123456789abcdef"), clock.now.Add(-2*time.Hour))
	// The promotion's meta.db, made in another root: no look of this
	// check opens it before the sweep does.
	elsewhere, otherRoot, _ := newTestStore(t, gates.Bounds{})
	runJob(t, elsewhere, testKey, localJob(), PromoteRequest{}, "rival")
	rival := filepath.Join(otherRoot, testKey, db.FileName)
	want, err := os.ReadFile(rival)
	if err != nil {
		t.Fatal(err)
	}
	// Armed once the first look has the key open: the next open is the
	// sweep's.
	var armed, once atomic.Bool
	faults.Set(func(p faults.Point) error {
		if p == faults.CheckAfterKeyOpen {
			armed.Store(true)
		}
		if p == faults.DBOpenBeforeMeta && armed.Load() && once.CompareAndSwap(false, true) {
			must(t, os.Rename(rival, filepath.Join(root, testKey, db.FileName)))
		}
		return nil
	})
	defer faults.Set(nil)
	found := checkFindings(t, s, CheckOptions{Repair: true})
	faults.Set(nil)
	if !once.Load() {
		t.Fatal("the repair's open never reached db-open/before-meta")
	}
	if f := chkFind(found, testKey+"/.current.jsonl.tmp-0123456789abcdef", KindStrayTemp); f == nil || !f.Repaired {
		t.Fatalf("check --repair: %+v; want the temp removed", found)
	}
	got, err := os.ReadFile(filepath.Join(root, testKey, db.FileName))
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("the key's meta.db after the sweep: %d bytes, %v; want the promotion's %d bytes with its record", len(got), err, len(want))
	}
}

// tempRemoveFails is the disk on which removing a promotion temp fails.
type tempRemoveFails struct{ durable.Disk }

func (d tempRemoveFails) Remove(dir *os.File, name string) error {
	if strings.HasPrefix(name, tmpPrefix) {
		return &os.PathError{Op: "unlinkat", Path: name, Err: unix.EIO}
	}
	return d.Disk.Remove(dir, name)
}

// A stray temp check --repair could not remove is reported not repaired,
// naming the error, and remains: not "removed ... or gone since".
func TestATempTheRepairCouldNotRemoveRemains(t *testing.T) {
	s, root, clock := newTestStore(t, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "one")
	name := ".current.jsonl.tmp-0123456789abcdef"
	chkOldFile(t, filepath.Join(root, testKey, name), clock.now.Add(-2*time.Hour))
	s.disk = diskWrites{tempRemoveFails{}}
	found, sum := chkRun(t, s, true)
	f := chkFind(found, testKey+"/"+name, KindStrayTemp)
	if f == nil || f.Repaired || !f.Remains || !strings.Contains(f.Repair, "input/output error") || sum.Remaining != 1 {
		t.Fatalf("check --repair with the temp's removal failing: %+v, %+v; want it not repaired, remaining, naming the error", found, sum)
	}
}

// eioReader fails every read past its first n bytes with EIO.
type eioReader struct {
	r io.ReaderAt
	n int64
}

func (e eioReader) ReadAt(p []byte, off int64) (int, error) {
	if off+int64(len(p)) > e.n {
		return 0, unix.EIO
	}
	return e.r.ReadAt(p, off)
}

// A transcript whose read fails is reported so, never judged: dump
// --verify's verify result is unreadable with the read's error, and
// check names the error; neither hangs on a read that keeps failing.
func TestAVerifyWhoseReadFailsSaysUnreadable(t *testing.T) {
	s, _, _ := newTestStore(t, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "one")
	prev := verifySource
	verifySource = func(f *os.File) io.ReaderAt { return eioReader{f, 0} }
	t.Cleanup(func() { verifySource = prev })
	job := localJob()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var rep KeyReport
	if err := s.InspectWith(ctx, InspectOptions{Verify: true, Job: &job}, func(r KeyReport) error { rep = r; return nil }); err != nil {
		t.Fatal(err)
	}
	if rep.Verify == nil || rep.Verify.Result != VerifyUnreadable || !strings.Contains(rep.Verify.Detail, "input/output error") {
		t.Fatalf("dump --verify of a transcript whose read fails: verify %+v; want unreadable, naming the error", rep.Verify)
	}
	var found []Finding
	if _, err := s.Check(ctx, CheckOptions{}, func(f Finding) error { found = append(found, f); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(found) != 1 || found[0].Kind != KindUnreadable || !strings.Contains(found[0].Detail, "input/output error") {
		t.Fatalf("check of a transcript whose read fails: %+v; want it unreadable, naming the error", found)
	}
}

// A stale temp reap could not remove from a kept key is a fault it
// reports: the key is in Failed, its skip names the error, and the temp
// is not listed as swept.
func TestAReapThatCouldNotSweepATempSaysSo(t *testing.T) {
	s, root, clock := newTestStore(t, gates.Bounds{TTL: opsTTL})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "fresh")
	name := ".current.jsonl.tmp-0123456789abcdef"
	chkOldFile(t, filepath.Join(root, testKey, name), clock.now.Add(-2*StaleTempAge))
	s.disk = diskWrites{tempRemoveFails{}}
	res, err := s.Reap(false)
	if err != nil || len(res.Swept) != 0 || len(res.Failed) != 1 || res.Failed[0] != testKey || !strings.Contains(res.Skipped[testKey], "input/output error") {
		t.Fatalf("reap with the temp's removal failing = %+v, %v; want the key failed, naming the error, nothing swept", res, err)
	}
}

// keyDirSyncFails is the disk on which every fsync of one key dir fails.
type keyDirSyncFails struct {
	durable.Disk
	key string
}

func (d keyDirSyncFails) SyncDir(dir *os.File) error {
	if filepath.Base(dir.Name()) == d.key {
		return &os.PathError{Op: "fsync", Path: dir.Name(), Err: unix.EIO}
	}
	return d.Disk.SyncDir(dir)
}

// A sweep whose removals reap could not make durable is a fault it
// reports too: a power cut may bring the temps back.
func TestAReapWhoseSweepIsNotMadeDurableSaysSo(t *testing.T) {
	s, root, clock := newTestStore(t, gates.Bounds{TTL: opsTTL})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "fresh")
	chkOldFile(t, filepath.Join(root, testKey, ".current.jsonl.tmp-0123456789abcdef"), clock.now.Add(-2*StaleTempAge))
	s.disk = diskWrites{keyDirSyncFails{key: testKey}}
	res, err := s.Reap(false)
	if err != nil || len(res.Failed) != 1 || res.Failed[0] != testKey || !strings.Contains(res.Skipped[testKey], "input/output error") {
		t.Fatalf("reap with the key dir's fsync failing = %+v, %v; want the key failed, naming the error", res, err)
	}
}

// A context reading's percentage is tokens*100/window rounded down, or
// none where that product is past int64: never a wrapped value.
func TestAContextPercentNearTheInt64BoundIsExactOrNone(t *testing.T) {
	for _, tokens := range []int64{math.MaxInt64 / 100, math.MaxInt64/100 + 1, math.MaxInt64 / 99, math.MaxInt64} {
		for _, window := range []int64{math.MaxInt64, tokens, 1 << 40} {
			c := NewContextReport(tokens, window, "m")
			want := new(big.Int).Div(new(big.Int).Mul(big.NewInt(tokens), big.NewInt(100)), big.NewInt(window))
			if c.Pct != nil && (!want.IsInt64() || *c.Pct != want.Int64()) {
				t.Errorf("%d tokens of %d: pct %d, want %v or none", tokens, window, *c.Pct, want)
			}
		}
	}
}

// renameIntoPlaceFails is the disk on which a rename over current.jsonl
// fails, as on a disk gone read-only under the promotion.
type renameIntoPlaceFails struct{ durable.Disk }

func (d renameIntoPlaceFails) Rename(dir *os.File, from, to string) error {
	if to == TranscriptName {
		return &os.PathError{Op: "renameat", Path: to, Err: unix.EIO}
	}
	return d.Disk.Rename(dir, from, to)
}

// A promotion whose commit landed and whose rename into place then failed
// keeps its temp: the commit is the key's conversation, and the next
// resolve serves it from the temp, the next writer rolls it forward.
func TestAPromotionWhoseRenameFailedKeepsItsCommittedTemp(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "one")
	sess, jobDir := mustResolve(t, s, testKey, localJob())
	stage(t, jobDir, append(staged(t, jobDir), entryLine("two")...))
	committed := staged(t, jobDir)
	s.disk = diskWrites{renameIntoPlaceFails{}}
	if res, err := s.Promote(sess, PromoteRequest{PiVersion: testPi}); err == nil && res.Promoted {
		t.Fatalf("promote with the rename failing = %+v; want it failed", res)
	}
	s.disk = diskWrites{}
	sess, jobDir = mustResolve(t, s, testKey, localJob())
	want(t, sess, true, gates.Resumed)
	if sess.Gen() != 2 || !bytes.Equal(staged(t, jobDir), committed) {
		t.Fatalf("resumed gen %d; want gen 2, the committed promotion", sess.Gen())
	}
	found := checkFindings(t, s, CheckOptions{Repair: true})
	if f := chkFind(found, testKey+"/"+db.FileName, KindPendingPromotion); f == nil || !f.Repaired || !strings.HasPrefix(f.Repair, "rolled forward") {
		t.Fatalf("check --repair: %+v; want the promotion rolled forward", found)
	}
	if !bytes.Equal(readCanonical(t, root, testKey), committed) {
		t.Fatal("the transcript in place is not the committed promotion")
	}
}

// renameAsideFails is the disk on which moving a key dir aside fails.
type renameAsideFails struct{ durable.Disk }

func (d renameAsideFails) RenameNoReplace(dir *os.File, from, to string) error {
	return &os.PathError{Op: "renameat2", Path: to, Err: unix.EIO}
}

// A quarantine whose move failed is not reported done: the key dir is
// still at its name, and resolves as before.
func TestAQuarantineWhoseMoveFailedLeavesTheKey(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "one")
	s.disk = diskWrites{renameAsideFails{}}
	found := checkFindings(t, s, CheckOptions{Repair: true, Quarantine: testKey})
	if q := chkFind(found, testKey, KindQuarantined); q == nil || q.Repaired || !strings.Contains(q.Repair, "input/output error") {
		t.Fatalf("check --quarantine whose move failed: %+v; want not repaired, naming the error", found)
	}
	s.disk = diskWrites{}
	sess, _ := checkDescribed(t, s, root, testKey)
	want(t, sess, true, gates.Resumed)
}

// A promotion onto a meta.db that lost its last commit is refused
// whichever of the two meta pages held that commit.
func TestPromoteRefusesALostCommitOnEitherMetaPage(t *testing.T) {
	pages := map[int]bool{}
	for extra := 0; extra < 2; extra++ {
		s, root, _ := newTestStore(t, gates.Bounds{})
		for i := 0; i < 2+extra; i++ {
			runJob(t, s, testKey, localJob(), PromoteRequest{}, fmt.Sprint("promotion ", i))
		}
		path := filepath.Join(root, testKey, db.FileName)
		m := metaPagesOf(t, path)
		newest := 0
		if m.Pages[1].Txid > m.Pages[0].Txid {
			newest = 1
		}
		pages[newest] = true
		damageNewestMetaPage(t, path)
		before := treeState(t, root)
		sess, jobDir := mustResolve(t, s, testKey, localJob())
		stage(t, jobDir, transcriptBytes(testClockStart, "a cold start over the lost commit"))
		if res, err := s.Promote(sess, PromoteRequest{PiVersion: testPi}); res.Promoted || !errors.Is(err, ErrMetaFellBack) {
			t.Fatalf("promote over a commit lost from meta page %d = %+v, %v; want promote-failed with ErrMetaFellBack", newest, res, err)
		}
		if treeState(t, root) != before {
			t.Fatalf("the refused promotion changed the key (meta page %d)", newest)
		}
	}
	if len(pages) != 2 {
		t.Fatalf("the fixture damaged meta pages %v; want both", pages)
	}
}

// KeyReport.LegacyBytes is nil for a key with no legacy files, as its doc
// says: "none" is not "0 bytes of them".
func TestLegacyBytesOfAKeyWithoutLegacyFilesIsNone(t *testing.T) {
	s, _, _ := newTestStore(t, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "one")
	var rep KeyReport
	if err := s.InspectWith(context.Background(), InspectOptions{LegacyBytes: true}, func(r KeyReport) error { rep = r; return nil }); err != nil {
		t.Fatal(err)
	}
	if len(rep.LegacyFiles) != 0 || rep.LegacyBytes != nil {
		t.Fatalf("legacy files %v, legacy bytes %v; want none and nil", rep.LegacyFiles, rep.LegacyBytes)
	}
}

// A first promotion whose new key dir could not be made durable (the
// root's fsync failed) is not acknowledged: a power cut could take the
// dir, and the conversation with it.
func TestAFirstPromotionWhoseKeyDirIsNotDurableFails(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	runJob(t, s, Key("github", "a/b", "other"), localJob(), PromoteRequest{}, "the root made")
	sess, jobDir := mustResolve(t, s, testKey, localJob())
	stage(t, jobDir, transcriptBytes(testClockStart, "first"))
	s.disk = diskWrites{rootSyncFails{root: root}}
	if res, err := s.Promote(sess, PromoteRequest{PiVersion: testPi}); err == nil || res.Promoted {
		t.Fatalf("a first promotion whose key dir's fsync failed = %+v, %v; want it failed, naming the fsync", res, err)
	}
}

// A resolve that could not open a committed promotion's temp (its serve
// failed after the look found it in flight) fails with that error: what
// the key holds is not known, so it hands out no verdict.
func TestAResolveThatCouldNotServeThePendingTempFails(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "before")
	sess, jobDir := mustResolve(t, s, testKey, localJob())
	stage(t, jobDir, append(staged(t, jobDir), entryLine("committed")...))
	crashAfterCommit(t, s, root, sess)
	eio := &os.PathError{Op: "open", Path: "temp", Err: unix.EIO}
	// Failed after the look, or at the read of the temp's first line (the
	// resolve's second header read: current.jsonl's is the first).
	for _, at := range []faults.Point{faults.PendingAfterLook, faults.TranscriptHeaderRead} {
		reads := 0
		faults.Set(func(p faults.Point) error {
			if p == faults.TranscriptHeaderRead {
				reads++
			}
			if p == at && (p != faults.TranscriptHeaderRead || reads == 2) {
				return eio
			}
			return nil
		})
		got, err := s.Resolve(testKey, localJob(), t.TempDir())
		faults.Set(nil)
		if !errors.Is(err, unix.EIO) {
			t.Fatalf("resolve with the pending temp not served (%s) = {resume %v, %s, gen %d}, %v; want the error", at, got.Resume, got.Reason, got.Gen(), err)
		}
	}
}

// A stray temp check --repair removed but whose removal it could not make
// durable (the key dir's fsync failing) is a repair that failed: a power
// cut may bring the temp back. It is marked not repaired, naming the
// error and that the temp was removed, as a meta.db moved aside whose
// fsync failed is, and as reap reports the same sweep; it was reported
// "removed", repaired, and check exited 0.
func TestATempRemovedWhoseDirFsyncFailedIsNotRepaired(t *testing.T) {
	s, root, clock := newTestStore(t, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "one")
	name := ".current.jsonl.tmp-0123456789abcdef"
	chkOldFile(t, filepath.Join(root, testKey, name), clock.now.Add(-2*time.Hour))
	s.disk = diskWrites{keyDirSyncFails{key: testKey}}
	found, _ := chkRun(t, s, true)
	f := chkFind(found, testKey+"/"+name, KindStrayTemp)
	if f == nil || f.Repaired || !f.RepairFailed || !strings.HasPrefix(f.Repair, "not repaired: removed, but not durably") || !strings.Contains(f.Repair, "input/output error") {
		t.Fatalf("check --repair with the key dir's fsync failing: %+v; want the temp's repair failed, saying it was removed and naming the error", found)
	}
}
