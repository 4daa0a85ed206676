package store

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"sessdb/db"
	"sessdb/gates"
	"sessdb/internal/faults"
	"sessdb/internal/fsat"
)

// A new meta.db is made as a temp that is linked to meta.db, and then the
// temp's name is removed: for an instant the one file has two names. A
// check whose look at a key found no meta.db holds no lock; it lists the
// dir, finds no writer holding the key, and then looks at each name. A
// first promotion can link its new meta.db in between, and fail after
// (removing the meta.db it made) or land and be reaped, before the look
// asks whether a meta.db appeared. That look reported the temp's two names
// as a hard link: TestChaos (.ci/long, 120 s, at 3fa4009) had a check
// --repair find "link" in a key while nothing damages a file. A creation
// in flight is not judged: check says what a look it can trust finds.
func TestCheckDoesNotTakeAMetaDBsCreationForAHardLink(t *testing.T) {
	for _, tc := range []struct {
		name   string
		repair bool
		fail   bool // the promotion fails after its temp, removing the meta.db it made
		reap   bool // it lands, and a reap past the TTL removes the key
		// finishAtFlock: the creation ends (and the promotion with it)
		// between the look's lstat of the temp and its flock, not after
		// the look's last entry.
		finishAtFlock bool
	}{
		{name: "failed after the link, check", fail: true},
		{name: "failed after the link, check --repair", fail: true, repair: true},
		{name: "landed, then reaped, check", reap: true},
		{name: "landed, check --repair", repair: true},
		{name: "landed between the lstat and the flock, then reaped, check", reap: true, finishAtFlock: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, root, clock := newTestStore(t, gates.Bounds{TTL: time.Hour})
			kd := filepath.Join(root, testKey)
			if err := os.MkdirAll(kd, 0o700); err != nil { // as a refused first promotion leaves it
				t.Fatal(err)
			}
			sess, jobDir := mustResolve(t, s, testKey, localJob())
			stage(t, jobDir, append(transcriptBytes(clock.now), entryLine("first")...))
			ahead, err := New(root, Options{Bounds: gates.Bounds{TTL: time.Hour}, Now: func() time.Time { return clock.now.Add(2 * time.Hour) }})
			if err != nil {
				t.Fatal(err)
			}

			type outcome struct {
				res PromoteResult
				err error
			}
			beforeLink, link, linked, finish := make(chan struct{}), make(chan struct{}), make(chan struct{}), make(chan struct{})
			done := make(chan outcome, 1)
			seen := map[faults.Point]int{}
			var mu sync.Mutex
			first := func(p faults.Point) bool {
				mu.Lock()
				defer mu.Unlock()
				seen[p]++
				return seen[p] == 1
			}
			finished := func() {
				finish <- struct{}{}
				if o := <-done; o.res.Promoted == tc.fail {
					t.Errorf("promote: %+v, %v; want promoted %t", o.res, o.err, !tc.fail)
				}
			}
			if tc.finishAtFlock {
				fsat.TestHookFlockedNowOpened = func(name string) {
					if strings.HasPrefix(name, db.TempPrefix) && first("flock of the temp") {
						finished()
					}
				}
				t.Cleanup(func() { fsat.TestHookFlockedNowOpened = nil })
			}
			faults.Set(func(p faults.Point) error {
				switch p {
				case faults.CheckAfterKeyOpen: // no meta.db: no lock held
					if first(p) {
						go func() {
							res, err := s.Promote(sess, PromoteRequest{PiVersion: testPi})
							done <- outcome{res, err}
						}()
						<-beforeLink
					}
				case faults.DBCreateBeforeLink: // the temp there, flocked, one name
					if first(p) {
						beforeLink <- struct{}{}
						<-link
					}
				case faults.CheckAfterKeyListed: // listed; no meta.db, so no writer
					if first(p) {
						link <- struct{}{}
						<-linked
					}
				case faults.DBCreateLinked: // two names now
					if first(p) {
						linked <- struct{}{}
						<-finish
					}
				case faults.PromoteAfterTempWrite:
					if tc.fail {
						return errors.New("injected: no space left on device")
					}
				case faults.CheckAfterKeyEntries: // each name looked at
					if !first(p) {
						return nil
					}
					if !tc.finishAtFlock {
						finished()
					}
					if tc.reap {
						if res, err := ahead.Reap(false); err != nil || len(res.Removed) != 1 {
							t.Errorf("reap past the TTL: %+v, %v; want the key removed", res, err)
						}
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
			mu.Lock()
			defer mu.Unlock()
			points := []faults.Point{faults.CheckAfterKeyListed, faults.DBCreateLinked, faults.CheckAfterKeyEntries}
			if tc.finishAtFlock {
				points = append(points, "flock of the temp")
			}
			for _, p := range points {
				if seen[p] == 0 {
					t.Errorf("%s was never reached: the interleaving did not happen", p)
				}
			}
			_, err = os.Lstat(filepath.Join(kd, db.FileName))
			if gone := errors.Is(err, os.ErrNotExist); gone != (tc.fail || tc.reap) {
				t.Errorf("after the check, meta.db gone %t (%v); want %t", gone, err, tc.fail || tc.reap)
			}
		})
	}
}

// A meta.db temp that has a second name nobody is creating with (no flock
// on it, the name still there) is a hard link, and a look that holds no
// lock still reports it: creatingDB asks the file, not the name.
func TestCheckOfAKeyWithNoLockReportsAHardLinkedMetaDBTemp(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	kd := filepath.Join(root, testKey)
	if err := os.MkdirAll(kd, 0o700); err != nil {
		t.Fatal(err)
	}
	tmp := linkTempIn(t, kd)
	found := checkFindings(t, s, CheckOptions{})
	if f := chkFind(found, testKey+"/"+tmp, KindLink); f == nil || f.Severity != SeverityProblem {
		t.Errorf("a hard-linked meta.db temp in a key with no meta.db is not reported as a link: %+v", found)
	}
	if f := chkFind(found, testKey+"/"+tmp, KindStrayTemp); f == nil {
		t.Errorf("the temp nobody holds is not reported as a stray: %+v", found)
	}
}

// creatingDB tells a meta.db's creation in flight (its temp's flock held
// from before the temp's name exists until that name is gone) from a hard
// link, asked of a file found with two names.
func TestCreatingDBTellsACreationFromAHardLink(t *testing.T) {
	for _, tc := range []struct {
		name string
		// act, after the file got its second name; meanwhile: between
		// the look's open and its flock.
		act, meanwhile func(t *testing.T, f *os.File, second string)
		want           bool
	}{
		{name: "its flock held", want: true, act: func(t *testing.T, f *os.File, _ string) {
			if err := fsat.Flock(f, unix.LOCK_EX); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "no flock: a hard link", want: false},
		{name: "its name gone", want: true, act: func(t *testing.T, f *os.File, _ string) {
			if err := os.Remove(f.Name()); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "its second name gone before the flock", want: true, meanwhile: func(t *testing.T, _ *os.File, second string) {
			if err := os.Remove(second); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "its name gone before the flock", want: true, meanwhile: func(t *testing.T, f *os.File, _ string) {
			if err := os.Remove(f.Name()); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, db.FileName)
			f, err := os.Create(p)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			second := filepath.Join(dir, db.TempPrefix+"00000000000000af")
			if err := os.Link(p, second); err != nil {
				t.Fatal(err)
			}
			if tc.act != nil {
				tc.act(t, f, second)
			}
			if tc.meanwhile != nil {
				fsat.TestHookFlockedNowOpened = func(string) { tc.meanwhile(t, f, second) }
				defer func() { fsat.TestHookFlockedNowOpened = nil }()
			}
			kd, err := fsat.OpenDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer kd.Close()
			if got := creatingDB(kd, db.FileName); got != tc.want {
				t.Errorf("creatingDB: %t, want %t", got, tc.want)
			}
		})
	}
}
