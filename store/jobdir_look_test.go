package store

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

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
// dir in use: the resolve gives up, ErrJobDirBusy, rather than wait on.
func TestAResolveGivesUpOnAStagedDirHeldSharedOnAndOn(t *testing.T) {
	s, _, _ := newTestStore(t, gates.Bounds{})
	key := Key("github", "acme/look", "b")
	_, jobDir := mustResolve(t, s, key, localJob())
	holdStagedShared(t, jobDir)
	if _, err := s.Resolve(key, localJob(), jobDir); !errors.Is(err, ErrJobDirBusy) {
		t.Fatalf("a resolve while its staged dir's flock is held shared throughout: %v; want ErrJobDirBusy", err)
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
