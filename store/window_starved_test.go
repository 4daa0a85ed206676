// FreeBSD's syscall.Rlimit holds int64s where Linux's and macOS's hold
// uint64s (testfs.Starved): the promises are the same there.

//go:build !freebsd

package store

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"sessdb/gates"
	"sessdb/internal/faults"
	"sessdb/internal/fsat"
	"sessdb/internal/testfs"
)

// A file found with two names whose flock creatingDB cannot ask (no
// descriptor left to open it) may be a hard link as much as a creation:
// it is reported as found (a hard link), never passed over as a creation
// in flight, which would hide a link through which something outside the
// key dir changes the file. With the open's failure taken for "in
// flight" (the twenty-third session's surviving mutant), this fails.
func TestCreatingDBThatCannotAskReportsTheLinkAsFound(t *testing.T) {
	kd, tmp := hardLinkedTemp(t)
	var creating bool
	var err error
	testfs.Starved(t, func() {
		creating = creatingDB(kd, tmp)
		_, err = fsat.FlockedNow(kd, tmp) // the question creatingDB asked, answered the same way
	})
	if !errors.Is(err, syscall.EMFILE) {
		t.Fatalf("fsat.FlockedNow with no descriptor left = %v; want EMFILE (the starvation did not hold)", err)
	}
	if creating {
		t.Error("creatingDB of a hard-linked temp it could not open = true (a creation in flight); want false: not known, reported as found")
	}
	if creatingDB(kd, tmp) {
		t.Error("creatingDB of a hard-linked temp with a descriptor to spare = true; want false")
	}
}

// A check whose look at a key with no meta.db has no descriptor left
// once it has listed the dir (another part of the process holds them
// all) cannot ask a meta.db temp's flock: the temp is reported as one it
// could not read (unreadable, a fault), never passed over in silence as
// a creation in flight nor reported stray; and its second name is
// reported as found, a hard link. With the temp's failed question
// skipped, check said nothing of a file it could not judge.
func TestCheckStarvedAfterItsListingReportsTheTempItCouldNotAsk(t *testing.T) {
	s, root, _ := newTestStore(t, gates.Bounds{})
	kd := filepath.Join(root, testKey)
	if err := os.MkdirAll(kd, 0o700); err != nil {
		t.Fatal(err)
	}
	tmp := linkTempIn(t, kd)
	path := testKey + "/" + tmp
	// The check closes descriptors of its own as it goes on (the key
	// dir's), so restore's word on the starvation says nothing here: the
	// EMFILE the temp's question met, reported, is what shows it held. A
	// descriptor the GC freed meanwhile (a file another test dropped)
	// lets that open succeed: the check runs again, at most 5 times.
	for try := 1; ; try++ {
		runtime.GC()
		var restore func() bool
		faults.Set(func(p faults.Point) error {
			if p == faults.CheckAfterKeyListed && restore == nil {
				restore = testfs.LowerFDLimit(t, 0)
			}
			return nil
		})
		found := checkFindings(t, s, CheckOptions{})
		faults.Set(nil)
		if restore == nil {
			t.Fatal("check never reached check/after-key-listed")
		}
		restore()
		f := chkFind(found, path, KindUnreadable)
		if f == nil || !strings.Contains(f.Detail, syscall.EMFILE.Error()) {
			if try < 5 {
				t.Logf("try %d: no EMFILE reported of the temp; the starved check runs again", try)
				continue
			}
			t.Errorf("the temp whose flock could not be asked is not reported unreadable (EMFILE): %+v", found)
		}
		if f := chkFind(found, path, KindStrayTemp); f != nil {
			t.Errorf("the temp whose flock could not be asked is reported stray: %+v", f)
		}
		if f := chkFind(found, path, KindLink); f == nil {
			t.Errorf("the temp's second name, not asked, is not reported as found (a hard link): %+v", found)
		}
		return
	}
}
