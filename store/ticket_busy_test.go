package store

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"sessdb/gates"
)

// ReadTicket's promise, in Go: no ticket while a resolve stages (the
// staged dir's flock held) is ErrJobDirBusy and fs.ErrNotExist both; no
// ticket once it is let go is fs.ErrNotExist alone; a ticket there is
// read, whoever holds the staged dir.
func TestReadTicketSaysBusyOnlyOfAMissingTicketWhileTheStagedDirIsHeld(t *testing.T) {
	s, _, _ := newTestStore(t, gates.Bounds{})
	key := Key("github", "acme/ticket", "busy")
	sess, jobDir := mustResolve(t, s, key, localJob())
	sd, err := os.Open(filepath.Join(jobDir, StagedDirName))
	if err != nil {
		t.Fatal(err)
	}
	defer sd.Close()
	if err := unix.Flock(int(sd.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	if got, err := ReadTicket(jobDir); err != nil || got.Ticket != sess.Ticket {
		t.Errorf("the ticket while the staged dir is held: %+v, %v; want ticket %s read", got, err, sess.Ticket)
	}
	if err := os.Remove(filepath.Join(jobDir, TicketName)); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadTicket(jobDir); !errors.Is(err, ErrJobDirBusy) || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("no ticket while the staged dir is held: %v; want ErrJobDirBusy and fs.ErrNotExist", err)
	}
	if err := unix.Flock(int(sd.Fd()), unix.LOCK_UN); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadTicket(jobDir); errors.Is(err, ErrJobDirBusy) || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("no ticket, the staged dir let go: %v; want fs.ErrNotExist alone", err)
	}
}
