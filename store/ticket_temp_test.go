package store

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"sessdb/gates"
)

// writeTicket goes through a temp file and a rename: when the rename
// cannot land (here a non-empty directory holds the ticket's name), the
// write fails and its temp goes with it, so a failed resolve leaves no
// stray file in the job dir for every later resolve to step around.
func TestFailedTicketWriteLeavesNoTemp(t *testing.T) {
	s, _, _ := newTestStore(t, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "a")
	sess, _ := mustResolve(t, s, testKey, localJob())
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, TicketName, "x"), 0o700); err != nil {
		t.Fatal(err)
	}
	jd, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer jd.Close()
	if err := writeTicket(jd, sess); err == nil {
		t.Fatal("a ticket renamed over a non-empty directory: no error")
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 || ents[0].Name() != TicketName {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("job dir after the failed write: %v; want only %s", names, TicketName)
	}
}

// What sits at the ticket's name but is no small regular file (a link,
// a FIFO, a directory, a file over 256 KiB) is ErrBadTicket, as that
// error's doc says, so that a worker tells a ticket no resolve wrote from
// a fault of the disk; a missing ticket stays fs.ErrNotExist. Before,
// each of them was the open's or the read's bare error.
func TestATicketThatIsNoSmallRegularFileIsABadTicket(t *testing.T) {
	base := t.TempDir()
	for name, put := range map[string]func(p string) error{
		"link":      func(p string) error { return os.Symlink(p+".real", p) },
		"fifo":      func(p string) error { return syscall.Mkfifo(p, 0o600) },
		"directory": func(p string) error { return os.Mkdir(p, 0o700) },
		"too large": func(p string) error { return os.WriteFile(p, make([]byte, maxTicketBytes+1), 0o600) },
	} {
		jobDir := filepath.Join(base, strings.ReplaceAll(name, " ", "-"))
		if err := os.Mkdir(jobDir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := put(filepath.Join(jobDir, TicketName)); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadTicket(jobDir); !errors.Is(err, ErrBadTicket) {
			t.Errorf("a ticket that is a %s: %v, want ErrBadTicket", name, err)
		}
	}
	if _, err := ReadTicket(base); !errors.Is(err, fs.ErrNotExist) || errors.Is(err, ErrBadTicket) {
		t.Errorf("no ticket: %v, want fs.ErrNotExist and not ErrBadTicket", err)
	}
}
