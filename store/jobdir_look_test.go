package store

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"sessdb/gates"
)

// holdStagedShared takes a shared flock of jobDir's staged dir, as
// ReadTicket's look (stagingNow) holds it for an instant, and returns
// the function that lets go of it.
func holdStagedShared(t *testing.T, jobDir string) (letGo func()) {
	t.Helper()
	sd, err := os.Open(filepath.Join(jobDir, StagedDirName))
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Flock(int(sd.Fd()), unix.LOCK_SH|unix.LOCK_NB); err != nil {
		sd.Close()
		t.Fatal(err)
	}
	var done bool
	letGo = func() {
		if !done {
			done = true
			sd.Close()
		}
	}
	t.Cleanup(letGo)
	return letGo
}

// A resolve whose staged dir's flock is asked for while a promote's
// ReadTicket looks whether a resolve stages there (a shared flock, let go
// at once) is not refused: the job dir is busy only while a resolve or
// promote holds it. Before, the look's instant was ErrJobDirBusy, "another
// resolve or promote is using the job dir", of a job dir none used.
func TestAResolveIsNotRefusedForATicketsLookAtItsStagedDir(t *testing.T) {
	s, _, _ := newTestStore(t, gates.Bounds{})
	key := Key("github", "acme/look", "a")
	_, jobDir := mustResolve(t, s, key, localJob())
	letGo := holdStagedShared(t, jobDir)
	looked := 0
	testHookStagingLooked = func() { looked++; letGo() }
	defer func() { testHookStagingLooked = nil }()
	sess, err := s.Resolve(key, localJob(), jobDir)
	if err != nil {
		t.Fatalf("a resolve while a look held its staged dir's flock shared: %v; want it resolved", err)
	}
	if looked == 0 {
		t.Errorf("the resolve never met the look's flock")
	}
	if ticket, err := ReadTicket(jobDir); err != nil || ticket.Ticket != sess.Ticket {
		t.Errorf("the job dir's ticket after the resolve: %+v, %v; want its ticket %s", ticket, err, sess.Ticket)
	}
}

// A shared flock held on longer than any look holds it is still a job
// dir in use: the resolve gives up, ErrJobDirBusy, rather than wait on,
// once it has tried for stagingLookWaitMost (a second), not before and
// not long after (a minute here, for a loaded host).
func TestAResolveGivesUpOnAStagedDirHeldSharedOnAndOn(t *testing.T) {
	s, _, _ := newTestStore(t, gates.Bounds{})
	key := Key("github", "acme/look", "b")
	_, jobDir := mustResolve(t, s, key, localJob())
	letGo := holdStagedShared(t, jobDir)
	var mu sync.Mutex
	defer func() { mu.Lock(); letGo(); mu.Unlock() }()
	done := make(chan error, 1)
	start := time.Now()
	go func() {
		_, err := s.Resolve(key, localJob(), jobDir)
		done <- err
	}()
	select {
	case err := <-done:
		if took := time.Since(start); !errors.Is(err, ErrJobDirBusy) || took < stagingLookWaitMost {
			t.Fatalf("a resolve while its staged dir's flock is held shared throughout: %v after %v; want ErrJobDirBusy after %v", err, took, stagingLookWaitMost)
		}
	case <-time.After(time.Minute):
		mu.Lock()
		letGo() // the resolve then takes the job dir and ends
		mu.Unlock()
		<-done
		t.Fatalf("a resolve while its staged dir's flock is held shared throughout still waiting a minute on; want ErrJobDirBusy after %v", stagingLookWaitMost)
	}
}

// A staged dir whose flock a resolve or promote holds (exclusive) is
// ErrJobDirBusy at once: only a look's shared flock is waited out.
func TestAResolveIsRefusedAtOnceWhileAnotherHoldsItsStagedDir(t *testing.T) {
	s, _, _ := newTestStore(t, gates.Bounds{})
	key := Key("github", "acme/look", "c")
	_, jobDir := mustResolve(t, s, key, localJob())
	sd, err := os.Open(filepath.Join(jobDir, StagedDirName))
	if err != nil {
		t.Fatal(err)
	}
	defer sd.Close()
	if err := unix.Flock(int(sd.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	waited := false
	testHookStagingLooked = func() { waited = true }
	defer func() { testHookStagingLooked = nil }()
	if _, err := s.Resolve(key, localJob(), jobDir); !errors.Is(err, ErrJobDirBusy) || waited {
		t.Fatalf("a resolve while another holds its staged dir: %v (waited for it: %t); want ErrJobDirBusy at once", err, waited)
	}
}

// A look held longer than one try (a promote's ReadTicket descheduled
// between its flock and its letting go, on a loaded host) is waited out:
// the resolve tries again every millisecond until the look lets go, up to
// stagingLookWaitMost. A resolve that gave up at its second try (the bound
// set from the first look's own instant, or the bound's test turned
// around) was ErrJobDirBusy for a look of a few milliseconds.
func TestAResolveWaitsOutALookHeldSomeMilliseconds(t *testing.T) {
	s, _, _ := newTestStore(t, gates.Bounds{})
	key := Key("github", "acme/look", "d")
	_, jobDir := mustResolve(t, s, key, localJob())
	letGo := holdStagedShared(t, jobDir)
	var mu sync.Mutex
	release := func() { mu.Lock(); letGo(); mu.Unlock() }
	defer release()
	var once sync.Once
	looked := 0
	testHookStagingLooked = func() {
		looked++
		once.Do(func() { time.AfterFunc(50*time.Millisecond, release) })
	}
	defer func() { testHookStagingLooked = nil }()
	if _, err := s.Resolve(key, localJob(), jobDir); err != nil {
		t.Fatalf("a resolve while a look held its staged dir's flock shared for 50 ms: %v; want it resolved", err)
	}
	if looked < 2 {
		t.Errorf("the resolve met the look's flock %d times; want it tried again while the look held it", looked)
	}
}
