package store

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"sessdb/db"
	"sessdb/gates"
	"sessdb/internal/durable"
	"sessdb/internal/faults"
)

// checkFindings runs Check with opts (no deep check) and returns what it
// found.
func checkFindings(t *testing.T, s *Store, opts CheckOptions) []Finding {
	t.Helper()
	var found []Finding
	if _, err := s.Check(context.Background(), opts, func(f Finding) error { found = append(found, f); return nil }); err != nil {
		t.Fatal(err)
	}
	return found
}

// expiredKey promotes key 30 days before the clock's now, past opsTTL.
func expiredKey(t *testing.T, s *Store, clock *testClock, key string) {
	t.Helper()
	clock.now = clock.now.Add(-30 * 24 * time.Hour)
	runJob(t, s, key, localJob(), PromoteRequest{}, "old")
	clock.now = clock.now.Add(30 * 24 * time.Hour)
}

// waitForStack waits until some goroutine's stack shows fn: a test's way
// to know that a promotion is waiting for a lock, not still on its way.
func waitForStack(t *testing.T, fn string) {
	t.Helper()
	buf := make([]byte, 1<<20)
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if bytes.Contains(buf[:runtime.Stack(buf, true)], []byte(fn)) {
			return
		}
	}
	t.Fatalf("no goroutine reached %s", fn)
}

// An expired key holding anything that is not the store's is left whole,
// and the reap says why: the subdirectory of issue 12 (today's reap
// removed the transcript and meta.db, then failed on it), a FIFO, a file
// at a name the store never writes.
func TestReapLeavesAKeyWithForeignEntriesWhole(t *testing.T) {
	for _, c := range []struct {
		name, want string
		make       func(dir string) error
	}{
		{"subdirectory", `"notes" is a directory`, func(dir string) error {
			if err := os.Mkdir(filepath.Join(dir, "notes"), 0o700); err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(dir, "notes", "todo"), []byte("keep me"), 0o600)
		}},
		{"fifo", `"pipe" is a FIFO`, func(dir string) error { return unix.Mkfifo(filepath.Join(dir, "pipe"), 0o600) }},
		{"unknown file", `"notes.txt" is a regular file`, func(dir string) error {
			return os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("mine"), 0o600)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, root, clock := newTestStore(t, gates.Bounds{TTL: opsTTL})
			expiredKey(t, s, clock, testKey)
			if err := c.make(keyDirPath(root, testKey)); err != nil {
				t.Fatal(err)
			}
			before := treeState(t, root)
			for _, dry := range []bool{true, false} {
				res, err := s.Reap(dry)
				why := res.Skipped[testKey]
				if err != nil || len(res.Removed) != 0 || !slices.Equal(res.Refused, []string{testKey}) || len(res.Failed) != 0 ||
					!strings.Contains(why, c.want) || !strings.Contains(why, "nothing was removed") {
					t.Fatalf("reap (dry run %v) = %+v, %v; want %s refused, naming %s", dry, res, err, testKey, c.want)
				}
				if got := treeState(t, root); got != before {
					t.Fatalf("reap (dry run %v) changed the key it refused:\n%s\nwas\n%s", dry, got, before)
				}
			}
			// Whole: the key still resolves as itself.
			sess, _ := checkDescribed(t, s, root, testKey)
			want(t, sess, false, gates.Expired)
		})
	}
}

// A promotion waiting for the key's lock while reap holds it fails
// cleanly after the rename, as it did before it: meta.db's name is gone
// and its dir removed when the lock comes free, so nothing is promoted
// anywhere and nothing is left under the root. So it does where the key
// is removed in place, its rename refused for want of room.
func TestReapFailsAWaitingPromotion(t *testing.T) {
	t.Run("renamed aside", func(t *testing.T) { reapFailsAWaitingPromotion(t, nil) })
	t.Run("removed in place", func(t *testing.T) {
		reapFailsAWaitingPromotion(t, diskWrites{roomless(durable.Disk{})})
	})
}

func reapFailsAWaitingPromotion(t *testing.T, disk durability) {
	s, root, clock := newTestStore(t, gates.Bounds{TTL: opsTTL})
	if disk != nil {
		s.disk = disk
	}
	expiredKey(t, s, clock, testKey)
	sess, jobDir := mustResolve(t, s, testKey, localJob())
	want(t, sess, false, gates.Expired)
	stage(t, jobDir, transcriptBytes(clock.now, "the run"))

	type promoted struct {
		res PromoteResult
		err error
	}
	done := make(chan promoted, 1)
	faults.Set(func(p faults.Point) error {
		if p == faults.ReapBeforeRename {
			go func() {
				res, err := s.Promote(sess, PromoteRequest{PiVersion: testPi})
				done <- promoted{res, err}
			}()
			waitForStack(t, "sessdb/db.lockKey") // the promotion waits for reap's lock
		}
		return nil
	})
	res, err := s.Reap(false)
	faults.Set(nil)
	if err != nil || !slices.Equal(res.Removed, []string{testKey}) {
		t.Fatalf("reap = %+v, %v", res, err)
	}
	p := <-done
	if p.err == nil || p.res.Promoted || p.res.Reason != gates.PromoteFailed {
		t.Fatalf("the waiting promotion = %+v, %v; want promote-failed", p.res, p.err)
	}
	if left, _ := os.ReadDir(root); len(left) != 0 {
		t.Fatalf("left under the root: %v", left)
	}
	if !bytes.Equal(staged(t, jobDir), transcriptBytes(clock.now, "the run")) {
		t.Fatal("the staged transcript changed")
	}
}

// A reap killed just after its rename, with a promotion waiting for the
// key's lock: the promotion lands in the reap-owned dir (the kill freed
// the lock, and its dir is whole there), and is never lost: check reports
// it, and the next reap moves it back to the key, which then resumes it.
func TestReapKilledWithAPromotionWaiting(t *testing.T) {
	s, root, clock := newTestStore(t, gates.Bounds{TTL: opsTTL})
	expiredKey(t, s, clock, testKey)
	sess, jobDir := mustResolve(t, s, testKey, localJob())
	run := append(transcriptBytes(clock.now, "old"), entryLine("landed after the kill")...)
	stage(t, jobDir, run)

	tmp := t.TempDir()
	ready, goOn := filepath.Join(tmp, "ready"), filepath.Join(tmp, "go")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=reap-kill-at", "SESSDB_ROOT="+root, "SESSDB_POINT="+string(faults.ReapAfterRename),
		"SESSDB_NOW="+strconv.FormatInt(clock.now.UnixNano(), 10), "TMPDIR="+tmp, "SESSDB_READY="+ready, "SESSDB_GO="+goOn)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if _, err := os.Stat(ready); err == nil {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("the reap never took the key's lock")
		}
	}
	type promoted struct {
		res PromoteResult
		err error
	}
	done := make(chan promoted, 1)
	go func() {
		res, err := s.Promote(sess, PromoteRequest{PiVersion: testPi})
		done <- promoted{res, err}
	}()
	waitForStack(t, "sessdb/db.flockUntil") // behind the child's flock
	os.WriteFile(goOn, nil, 0o600)
	var ee *exec.ExitError
	if err := cmd.Wait(); !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("the reap was not killed: %v", err)
	}
	p := <-done
	if p.err != nil || !p.res.Promoted {
		t.Fatalf("the waiting promotion = %+v, %v", p.res, p.err)
	}

	// Until the next reap the key is gone, and check says where it is.
	got, _ := checkDescribed(t, s, root, testKey)
	want(t, got, false, gates.Absent)
	found := checkFindings(t, s, CheckOptions{})
	if len(found) != 1 || found[0].Kind != KindReapInterrupted || !strings.Contains(found[0].Detail, "a promotion (gen 2) landed") {
		t.Fatalf("check = %+v", found)
	}
	res, err := s.Reap(false)
	if err != nil || len(res.Restored) != 1 || len(res.Removed)+len(res.Finished)+len(res.Skipped) != 0 {
		t.Fatalf("the next reap = %+v, %v; want the reap-owned dir moved back", res, err)
	}
	got, data := checkDescribed(t, s, root, testKey)
	want(t, got, true, gates.Resumed)
	if !bytes.Equal(data, run) {
		t.Fatal("the key resumes something other than the promotion that landed")
	}
}

// What a killed reap leaves is finished by the next reap whatever the TTL
// (a dry run only says so, the same), or moved back when a promotion landed in it
// (never over a key made again since); a quarantine dir and names that
// only look like the store's are left alone.
func TestReapFinishesWhatAKilledReapLeft(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	plain, landed, taken := Key("a", "b", "plain"), Key("a", "b", "landed"), Key("a", "b", "taken")
	for _, k := range []string{plain, landed, taken} {
		runJob(t, s, k, localJob(), PromoteRequest{}, "one")
	}
	appendReaping := func(k string) {
		d, err := db.OpenWriter(openDirT(t, keyDirPath(root, k)), "meta.db", db.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		if err := d.Update(func(tx *db.Tx) error {
			_, err := tx.AppendHistory(db.HistoryEntry{Gen: 1, Outcome: reapingOutcome})
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	appendReaping(plain)
	appendReaping(taken)
	runJob(t, s, taken, localJob(), PromoteRequest{}, "two") // after the reaping entry
	// landed: no reaping entry at all (a meta.db made after the reap's
	// went), but a promotion.
	asides := map[string]string{}
	for _, k := range []string{plain, landed, taken} {
		asides[k] = ReapedPrefix + k + "-00000000000000" + k[:2]
		if err := os.Rename(keyDirPath(root, k), filepath.Join(root, asides[k])); err != nil {
			t.Fatal(err)
		}
	}
	runJob(t, s, taken, localJob(), PromoteRequest{}, "the key made again")
	quarantine := QuarantinePrefix + plain + "-20261101T120000Z"
	for _, n := range []string{quarantine, ".reaped-" + plain + "-short", ".reaped-not-a-key-0000000000000000"} {
		os.MkdirAll(filepath.Join(root, n), 0o700)
	}

	before := treeState(t, root)
	dry, err := s.Reap(true)
	if err != nil || !slices.Equal(dry.Finished, []string{asides[plain]}) || !slices.Equal(dry.Restored, []string{asides[landed]}) ||
		!slices.Equal(dry.Failed, []string{asides[taken]}) || !strings.Contains(dry.Skipped[asides[taken]], ErrReapedKeyExists.Error()) {
		t.Fatalf("dry run = %+v, %v", dry, err)
	}
	if treeState(t, root) != before {
		t.Fatal("a dry run changed the tree")
	}
	res, err := s.Reap(false)
	if err != nil || !slices.Equal(res.Finished, []string{asides[plain]}) || !slices.Equal(res.Restored, []string{asides[landed]}) ||
		!slices.Equal(res.Failed, []string{asides[taken]}) || !strings.Contains(res.Skipped[asides[taken]], ErrReapedKeyExists.Error()) ||
		res.Skipped[quarantine] != errQuarantined.Error() || len(res.Skipped) != 4 {
		t.Fatalf("reap = %+v, %v", res, err)
	}
	for _, n := range []string{asides[plain], asides[landed]} {
		if _, err := os.Lstat(filepath.Join(root, n)); !os.IsNotExist(err) {
			t.Errorf("%s is still there", n)
		}
	}
	got, _ := checkDescribed(t, s, root, landed)
	want(t, got, true, gates.Resumed)
	for _, n := range []string{asides[taken], quarantine, ".reaped-" + plain + "-short"} {
		if _, err := os.Lstat(filepath.Join(root, n)); err != nil {
			t.Errorf("%s was touched: %v", n, err)
		}
	}
}

// openDirT opens a directory for a db call in a test.
func openDirT(t *testing.T, path string) *os.File {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// expiredLegacyTicket makes an expired legacy key and a ticket for it,
// its answered run staged.
func expiredLegacyTicket(t *testing.T) (*Store, string, Session) {
	t.Helper()
	s, root, clock := newTestStore(t, gates.Bounds{TTL: opsTTL})
	old := clock.now.Add(-30 * 24 * time.Hour)
	writeLegacy(t, root, testKey, map[string]string{TranscriptName: string(transcriptBytes(old)), "venue": "local", "pi-version": testPi})
	os.Chtimes(filepath.Join(root, testKey, TranscriptName), old, old)
	sess, jobDir := mustResolve(t, s, testKey, localJob())
	want(t, sess, false, gates.Expired)
	stage(t, jobDir, transcriptBytes(clock.now, "the run"))
	return s, root, sess
}

// A promotion that lands on an expired legacy key between reap's first
// look (no meta.db then) and its lock keeps the key and the record it
// committed: reap removes only a meta.db that holds nothing (found by an
// audit: it unlinked the promotion's, and the acknowledged promotion was
// lost, its retry answered superseded).
func TestReapKeepsAPromotionThatLandsBeforeItsLock(t *testing.T) {
	s, root, sess := expiredLegacyTicket(t)
	var landed PromoteResult
	faults.Set(func(p faults.Point) error {
		if p == faults.ReapBeforeLock {
			faults.Set(nil)
			landed = mustPromote(t, s, sess, PromoteRequest{PiVersion: testPi})
		}
		return nil
	})
	res, err := s.Reap(false)
	faults.Set(nil)
	if err != nil || len(res.Removed) != 0 || !landed.Promoted || landed.Gen != 1 {
		t.Fatalf("reap = %+v, %v; promotion = %+v; want the key kept and promoted", res, err, landed)
	}
	if sc := sidecarsOf(t, root, testKey); sc.Transcript == nil || sc.Transcript.Gen != 1 {
		t.Fatalf("the promotion's record is gone: %+v", sc)
	}
	if again := mustPromote(t, s, sess, PromoteRequest{PiVersion: testPi}); !again.Repeat {
		t.Fatalf("the retried ticket = %+v, want a repeat", again)
	}
	sess, _ = mustResolve(t, s, testKey, localJob())
	want(t, sess, true, gates.Resumed)
}

// An expired legacy key whose meta.db was a promotion's lock file, there
// at the reap's first look and removed before its read (a refused
// promotion removes the one it made, under the lock that read waits for),
// is reaped by its transcript's mtime, as with no meta.db at all: it was
// skipped, "open …/meta.db: no such file or directory", not counted as a
// failure, the expired key kept.
func TestReapRemovesAnExpiredLegacyKeyWhoseLockFileWent(t *testing.T) {
	s, root, clock := newTestStore(t, gates.Bounds{TTL: opsTTL})
	old := clock.now.Add(-30 * 24 * time.Hour)
	writeLegacy(t, root, testKey, map[string]string{TranscriptName: string(transcriptBytes(old, "legacy turn"))})
	p := filepath.Join(root, testKey, TranscriptName)
	if err := os.Chtimes(p, old, old); err != nil {
		t.Fatal(err)
	}
	kd := openDirT(t, filepath.Join(root, testKey))
	w, err := db.OpenWriter(kd, db.FileName, db.Options{}) // the promotion's lock file
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	gone := false
	faults.Set(func(q faults.Point) error {
		if q == faults.DBOpenBeforeMeta && !gone {
			gone = true
			return os.Remove(filepath.Join(root, testKey, db.FileName))
		}
		return nil
	})
	t.Cleanup(func() { faults.Set(nil) })
	res, err := s.Reap(false)
	if err != nil || !gone || !slices.Equal(res.Removed, []string{testKey}) || len(res.Skipped) != 0 {
		t.Fatalf("reap of an expired legacy key whose lock file went under its look: removed %v, skipped %v, %v (lock file removed: %v); want it removed", res.Removed, res.Skipped, err, gone)
	}
	if _, err := os.Lstat(filepath.Join(root, testKey)); !os.IsNotExist(err) {
		t.Fatalf("the key dir after the reap: %v", err)
	}
}

// The two above at once: the first look saw a promotion's lock file, which
// went before its read (the key judged by its transcript's old mtime), and
// a promotion landed before the reap's lock. The judgement is made again
// under the lock, on the record the promotion committed: the key is kept.
func TestReapKeepsAPromotionThatLandsAfterItsLookLostTheLockFile(t *testing.T) {
	s, root, sess := expiredLegacyTicket(t)
	kd := openDirT(t, filepath.Join(root, testKey))
	w, err := db.OpenWriter(kd, db.FileName, db.Options{}) // a promotion's lock file
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	gone := false
	var landed PromoteResult
	faults.Set(func(p faults.Point) error {
		switch {
		case p == faults.DBOpenBeforeMeta && !gone:
			gone = true
			return os.Remove(filepath.Join(root, testKey, db.FileName))
		case p == faults.ReapBeforeLock:
			faults.Set(nil)
			landed = mustPromote(t, s, sess, PromoteRequest{PiVersion: testPi})
		}
		return nil
	})
	t.Cleanup(func() { faults.Set(nil) })
	res, err := s.Reap(false)
	faults.Set(nil)
	if err != nil || !gone || len(res.Removed) != 0 || !landed.Promoted || landed.Gen != 1 {
		t.Fatalf("reap = %+v, %v (lock file removed: %v); promotion = %+v; want the key kept and promoted", res, err, gone, landed)
	}
	if sc := sidecarsOf(t, root, testKey); sc.Transcript == nil || sc.Transcript.Gen != 1 {
		t.Fatalf("the promotion's record is gone: %+v", sc)
	}
}

// A reap-owned dir a promotion landed in is restored over an empty dir at
// its key (a refused first promotion leaves one, and so does a two-step
// rename killed after its mkdir), where the system has an atomic
// no-replace rename and where it has not; never over a symbolic link to
// one, nor over a dir with anything in it. The empty dir blocked the
// restore (ErrReapedKeyExists) until an operator removed it.
func TestAReapedDirIsRestoredOverAnEmptyKeyDir(t *testing.T) {
	for _, c := range []struct {
		name     string
		atKey    func(t *testing.T, path string)
		twoStep  bool
		restored bool
	}{
		{"empty dir", func(t *testing.T, p string) { mustMkdir(t, p) }, false, true},
		{"empty dir, two-step rename", func(t *testing.T, p string) { mustMkdir(t, p) }, true, true},
		{"dir with a file", func(t *testing.T, p string) {
			mustMkdir(t, p)
			if err := os.WriteFile(filepath.Join(p, "x"), nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}, false, false},
		{"link to an empty dir", func(t *testing.T, p string) {
			target := t.TempDir()
			if err := os.Symlink(target, p); err != nil {
				t.Fatal(err)
			}
		}, false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, root, _ := newTestStore(t, gates.Bounds{})
			key := Key("a", "b", "restore over empty")
			runJob(t, s, key, localJob(), PromoteRequest{}, "landed")
			run, err := os.ReadFile(filepath.Join(keyDirPath(root, key), TranscriptName))
			if err != nil {
				t.Fatal(err)
			}
			aside := ReapedPrefix + key + "-00000000000000ee"
			if err := os.Rename(keyDirPath(root, key), filepath.Join(root, aside)); err != nil {
				t.Fatal(err)
			}
			c.atKey(t, keyDirPath(root, key))
			if c.twoStep {
				s.disk = diskWrites{linkFallback{}}
			}
			res, err := s.Reap(false)
			if c.restored {
				if err != nil || !slices.Equal(res.Restored, []string{aside}) || len(res.Failed) != 0 {
					t.Fatalf("reap = %+v, %v; want %s restored", res, err, aside)
				}
				got, data := checkDescribed(t, s, root, key)
				want(t, got, true, gates.Resumed)
				if !bytes.Equal(data, run) {
					t.Fatal("the key resumes something other than the promotion that landed")
				}
				return
			}
			if err != nil || !slices.Equal(res.Failed, []string{aside}) || !strings.Contains(res.Skipped[aside], ErrReapedKeyExists.Error()) {
				t.Fatalf("reap = %+v, %v; want %s failed with ErrReapedKeyExists", res, err, aside)
			}
			if _, err := os.Lstat(filepath.Join(root, aside)); err != nil {
				t.Errorf("the reap-owned dir after a refused restore: %v", err)
			}
		})
	}
}

func mustMkdir(t *testing.T, p string) {
	t.Helper()
	if err := os.Mkdir(p, 0o700); err != nil {
		t.Fatal(err)
	}
}
