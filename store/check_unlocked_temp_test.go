package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"sessdb/db"
	"sessdb/gates"
	"sessdb/internal/faults"
	"sessdb/internal/fsat"
)

// A check that opened a key dir with no meta.db holds no lock: a
// promotion may take the key's lock (making meta.db) and write its temp
// while the check lists the dir. Such a look must not report that
// promotion's temp as a stray temp, a problem (exit 3), whatever happens
// before the check looks again whether a meta.db appeared: the promotion
// may land and a reap whose clock is past the TTL remove the key dir
// (meta.db with it), or the promotion may fail after its temp is written
// and remove the temp and the meta.db it made. TestChaos (.ci/long, 120 s,
// at 0648b7b) found the first: a check --repair during the run reported
// stray-temp, "removed by the roll-forward, or gone since it was found".
// What check says of the key is what a look it can trust finds: the key
// as it is afterwards.
func TestCheckOfAKeyWithNoLockReportsNoWritersTemp(t *testing.T) {
	for _, tc := range []struct {
		name   string
		repair bool
		fail   bool // each promotion fails after its temp is written
		reap   bool // landed, a reap past the TTL removes the key, and a job makes it again
		// looks: promotions, one during each look check makes of the key
		// (maxKeyReads: every look finds one at work, and the last
		// look's word is final).
		looks int
		// damaged: the key dir holds a damaged meta.db (no lock to take),
		// which a repair elsewhere moves aside once check opened it.
		damaged bool
	}{
		{name: "landed, then reaped, check --repair", repair: true, reap: true, looks: 1},
		{name: "landed, then reaped, check", reap: true, looks: 1},
		{name: "failed after its temp, check", fail: true, looks: 1},
		{name: "failed after its temp, check --repair", repair: true, fail: true, looks: 1},
		{name: "one failed after its temp during each look, check", fail: true, looks: maxKeyReads},
		{name: "landed, check", looks: 1},
		{name: "landed beside a damaged meta.db moved aside, check", damaged: true, looks: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, root, clock := newTestStore(t, gates.Bounds{TTL: time.Hour})
			// An empty key dir, as a refused first promotion leaves one;
			// or one whose meta.db is damaged (empty).
			kd := filepath.Join(root, testKey)
			if err := os.MkdirAll(kd, 0o700); err != nil {
				t.Fatal(err)
			}
			if tc.damaged {
				if err := os.WriteFile(filepath.Join(kd, db.FileName), nil, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			sessions := make([]Session, tc.looks)
			for i := range sessions {
				var jobDir string
				sessions[i], jobDir = mustResolve(t, s, testKey, localJob())
				stage(t, jobDir, append(transcriptBytes(clock.now), entryLine(fmt.Sprintf("run %d", i))...))
			}
			// Another process, whose clock is two hours ahead.
			ahead, err := New(root, Options{Bounds: gates.Bounds{TTL: time.Hour}, Now: func() time.Time { return clock.now.Add(2 * time.Hour) }})
			if err != nil {
				t.Fatal(err)
			}
			againDir := t.TempDir()
			againSess, err := ahead.Resolve(testKey, localJob(), againDir)
			if err != nil {
				t.Fatal(err)
			}
			stage(t, againDir, append(transcriptBytes(clock.now), entryLine("again")...))

			type outcome struct {
				res PromoteResult
				err error
			}
			written, release, done := make(chan struct{}, tc.looks), make(chan struct{}, tc.looks), make(chan outcome, tc.looks)
			var opened, stopped, listed int // each hook's calls so far
			var mu sync.Mutex
			next := func(n *int) (i int) {
				mu.Lock()
				defer mu.Unlock()
				i, *n = *n, *n+1
				return i
			}
			faults.Set(func(p faults.Point) error {
				switch p {
				case faults.CheckAfterKeyOpen:
					i := next(&opened)
					if i >= tc.looks {
						return nil
					}
					if i == 0 && tc.damaged {
						// Moved aside by another check --repair: the
						// promotion below makes a meta.db of its own.
						if err := os.Rename(filepath.Join(kd, db.FileName), filepath.Join(kd, AsidePrefix+"20261101T120000Z")); err != nil {
							t.Error(err)
						}
					}
					go func() {
						res, err := s.Promote(sessions[i], PromoteRequest{PiVersion: testPi})
						done <- outcome{res, err}
					}()
					<-written // its temp written, under the lock it made meta.db for
				case faults.PromoteAfterTempWrite:
					if next(&stopped) >= tc.looks {
						return nil
					}
					written <- struct{}{}
					<-release
					if tc.fail {
						return errors.New("injected: no space left on device")
					}
				case faults.CheckAfterKeyEntries:
					if next(&listed) >= tc.looks {
						return nil
					}
					release <- struct{}{}
					if o := <-done; o.res.Promoted == tc.fail {
						t.Errorf("promote: %+v, %v; want promoted %t", o.res, o.err, !tc.fail)
					}
					if !tc.reap {
						return nil
					}
					if res, err := ahead.Reap(false); err != nil || len(res.Removed) != 1 {
						t.Errorf("reap past the TTL: %+v, %v; want the key removed", res, err)
					}
					if res, err := ahead.Promote(againSess, PromoteRequest{PiVersion: testPi}); err != nil || !res.Promoted {
						t.Errorf("promote after the reap: %+v, %v", res, err)
					}
				}
				return nil
			})
			t.Cleanup(func() { faults.Set(nil) })
			for _, f := range checkFindings(t, s, CheckOptions{Repair: tc.repair}) {
				if f.Severity == SeverityProblem {
					t.Errorf("check found %s %s: %s (repair: %q)", f.Kind, f.Path, f.Detail, f.Repair)
				}
			}
			if mu.Lock(); stopped < tc.looks || listed < tc.looks {
				t.Errorf("%d promotions wrote their temp during the check's %d looks; want %d", stopped, listed, tc.looks)
			}
			mu.Unlock()
		})
	}
}

// A look that holds no lock still reports a promotion temp beside a
// meta.db no writer can lock (a symbolic link, a FIFO: a writer's open
// refuses either), or an empty meta.db nobody holds, or none at all: no
// promotion is at work there, and the temp is a stray (--repair, which
// leaves a key whose meta.db it cannot lock, is not asked here).
func TestCheckOfAKeyWithNoLockReportsAStrayTemp(t *testing.T) {
	for _, c := range []struct {
		name string
		make func(t *testing.T, p string)
	}{
		{"no meta.db", func(t *testing.T, p string) { os.Remove(p) }},
		{"an empty meta.db", func(t *testing.T, p string) { os.Truncate(p, 0) }},
		{"a symbolic link", func(t *testing.T, p string) {
			real := filepath.Join(t.TempDir(), db.FileName)
			if err := os.Rename(p, real); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(real, p); err != nil {
				t.Fatal(err)
			}
		}},
		{"a FIFO", func(t *testing.T, p string) {
			os.Remove(p)
			if err := syscall.Mkfifo(p, 0o600); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, root, _ := newTestStore(t, gates.Bounds{})
			key := chkKey(t, s, c.name)
			c.make(t, chkDB(root, key))
			tmp := tmpPrefix + "00000000000000af"
			if err := os.WriteFile(filepath.Join(root, key, tmp), []byte("debris\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			found := checkFindings(t, s, CheckOptions{})
			if f := chkFind(found, key+"/"+tmp, KindStrayTemp); f == nil || f.Severity != SeverityProblem {
				t.Errorf("check beside %s: the stray temp is not reported: %+v", c.name, found)
			}
		})
	}
}

// check --repair never removes a live promotion's temp, even when a look
// reported it: every removal of a promotion temp (the roll-forward's sweep,
// the stray temps' removal) is made under the key's exclusive lock, which
// the promotion holds from before it writes its temp until it has renamed
// or removed it. Here the repair is handed what the look before the fix
// reported (the temp a stray, and a pending promotion to roll forward)
// while the promotion that wrote the temp holds the lock: it waits for the
// lock, fails for want of it, and removes nothing; the promotion then
// lands, its transcript whole.
func TestRepairNeverRemovesALivePromotionsTemp(t *testing.T) {
	s, root, clock := newTestStore(t, gates.Bounds{})
	key := chkKey(t, s, "live temp")
	sess, jobDir := mustResolve(t, s, key, localJob())
	want(t, sess, true, gates.Resumed)
	data := append(staged(t, jobDir), entryLine("live")...)
	stage(t, jobDir, data)
	impatient, err := New(root, Options{Now: clock.Now, LockTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}

	written, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	faults.Set(func(p faults.Point) error {
		if p == faults.PromoteAfterTempWrite {
			once.Do(func() { close(written); <-release })
		}
		return nil
	})
	t.Cleanup(func() { faults.Set(nil) })
	done := make(chan error, 1)
	go func() {
		res, err := s.Promote(sess, PromoteRequest{PiVersion: testPi})
		if err == nil && !res.Promoted {
			err = errors.New("not promoted: " + string(res.Reason))
		}
		done <- err
	}()
	<-written
	kd := filepath.Join(root, key)
	names, err := filepath.Glob(filepath.Join(kd, tmpPrefix+"*"))
	if err != nil || len(names) != 1 {
		close(release)
		t.Fatalf("the promotion's temp: %v, %v", names, err)
	}
	tmp := filepath.Base(names[0])
	found := []Finding{
		{Path: key + "/" + tmp, Key: key, Kind: KindStrayTemp, Severity: SeverityProblem},
		{Path: key + "/" + db.FileName, Key: key, Kind: KindPendingPromotion, Severity: SeverityProblem},
	}
	rootF, err := os.Open(root)
	if err != nil {
		close(release)
		t.Fatal(err)
	}
	defer rootF.Close()
	impatient.repair(context.Background(), rootF, key, found)
	_, statErr := os.Lstat(names[0])
	close(release)
	if statErr != nil {
		t.Errorf("the repair removed the live promotion's temp: %v", statErr)
	}
	for _, f := range found {
		if !f.RepairFailed || f.Repaired {
			t.Errorf("repair of %s with the promotion holding the lock: %q (repaired %v); want it not repaired, for want of the lock", f.Kind, f.Repair, f.Repaired)
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := readCanonical(t, root, key); !bytes.Equal(got, data) {
		t.Errorf("the transcript after the promotion is %d bytes; want the %d staged", len(got), len(data))
	}
}

// A meta.db being created is a writer's work in flight until its temp's
// name is gone: its creator holds the temp's flock until then, linked into
// place and unlinked. A check that opened the temp just before the unlink
// and had the flock just after, on a file no name leads to any more, took
// a creation that went well for debris, a stray temp (TestChaos, seed 21
// at 60 s: "a meta.db under construction that was never linked into
// place, 0s old"). It is a name gone since the listing: nothing to say.
func TestCheckOfAMetaDBTempLinkedUnderTheLook(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	key := chkKey(t, s, "meta temp linked")
	name := db.TempPrefix + "00000000000000b0"
	tmp := filepath.Join(root, key, name)
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	fired := false
	fsat.TestHookFlockedNowOpened = func(n string) {
		if n != name {
			return
		}
		once.Do(func() {
			// The creator's link is beside the point: its unlink of the
			// temp, then its flock let go (bbolt's Close, the file's).
			if err := os.Remove(tmp); err != nil {
				t.Error(err)
			}
			f.Close()
			fired = true
		})
	}
	t.Cleanup(func() { fsat.TestHookFlockedNowOpened = nil })
	for _, f := range checkFindings(t, s, CheckOptions{}) {
		if f.Severity == SeverityProblem {
			t.Errorf("check found %s %s: %s", f.Kind, f.Path, f.Detail)
		}
	}
	if !fired {
		t.Fatal("the check never looked at the meta.db temp")
	}
}
