package store

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"sessdb/gates"
)

// setTicketFile replaces writeTicket's write and close of its temp for the
// rest of the test; a nil one is the real one.
func setTicketFile(t *testing.T, write func(*os.File, []byte) (int, error), close func(*os.File) error) {
	t.Helper()
	w, c := ticketWrite, ticketClose
	t.Cleanup(func() { ticketWrite, ticketClose = w, c })
	ticketWrite, ticketClose = (*os.File).Write, (*os.File).Close
	if write != nil {
		ticketWrite = write
	}
	if close != nil {
		ticketClose = close
	}
}

// A ticket whose write or close fails (a full disk; an NFS close that
// reports a write lost) is a fault: the resolve fails, with that error,
// and leaves no ticket, no temp and no staged file, as after any fault.
// A ticket kept though its bytes never landed would be read by promote
// as a torn ticket (ErrBadTicket, exit 1) or an empty one, and the job's
// run promoted by nothing. mutjob45's T06 and T07 (the write's and the
// close's error dropped) lived: no test could fail either.
func TestATicketWhoseWriteOrCloseFailsIsAFault(t *testing.T) {
	s, _, _ := newTestStore(t, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "first")
	full := &os.PathError{Op: "write", Path: "ticket", Err: syscall.ENOSPC}
	for _, c := range []struct {
		name  string
		write func(*os.File, []byte) (int, error)
		close func(*os.File) error
	}{
		{"write", func(f *os.File, b []byte) (int, error) {
			n, _ := f.Write(b[:len(b)/2]) // half landed, then the disk filled
			return n, full
		}, nil},
		{"close", nil, func(f *os.File) error {
			f.Close()
			return full
		}},
	} {
		setTicketFile(t, c.write, c.close)
		jobDir := t.TempDir()
		sess, err := s.Resolve(testKey, localJob(), jobDir)
		if !errors.Is(err, syscall.ENOSPC) {
			t.Fatalf("a ticket whose %s failed: resolve = %+v, %v; want the ENOSPC", c.name, sess, err)
		}
		entries, rerr := os.ReadDir(jobDir)
		if rerr != nil {
			t.Fatal(rerr)
		}
		for _, e := range entries {
			if e.Name() != StagedDirName {
				t.Errorf("a ticket whose %s failed left %s in the job dir", c.name, e.Name())
			}
		}
		if _, err := os.Lstat(filepath.Join(jobDir, StagedDirName, TranscriptName)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("a ticket whose %s failed left the staged file: %v", c.name, err)
		}
	}
}

// A resolve killed between its ticket temp's create and its rename leaves
// the temp; the job dir's next resolve writes its own, under another
// name, and succeeds, the dead one's left as it is. Under one fixed name
// (mutjob45's T03) every later resolve in that job dir failed on O_EXCL,
// and no test saw the name.
func TestATicketTempLeftByAKilledResolveFailsNoLaterResolve(t *testing.T) {
	s, _, _ := newTestStore(t, gates.Bounds{})
	runJob(t, s, testKey, localJob(), PromoteRequest{}, "first")
	var temps []string
	setTicketFile(t, func(f *os.File, b []byte) (int, error) {
		temps = append(temps, f.Name())
		return f.Write(b)
	}, nil)
	jobDir := t.TempDir()
	if _, err := s.Resolve(testKey, localJob(), jobDir); err != nil {
		t.Fatal(err)
	}
	// What a kill there leaves: the temp at its name, part written.
	if len(temps) != 1 || !strings.HasPrefix(filepath.Base(temps[0]), "."+TicketName+".tmp-") {
		t.Fatalf("ticket temps %q, want one", temps)
	}
	left := filepath.Join(jobDir, filepath.Base(temps[0]))
	if err := os.WriteFile(left, []byte(`{"key":`), 0o600); err != nil {
		t.Fatal(err)
	}
	sess, err := s.Resolve(testKey, localJob(), jobDir)
	if err != nil || !sess.Resume {
		t.Fatalf("a resolve beside a killed one's ticket temp = %+v, %v; want a resume", sess, err)
	}
	if got, err := ReadTicket(jobDir); err != nil || got.Ticket != sess.Ticket {
		t.Fatalf("the ticket = %+v, %v; want the resolve's", got, err)
	}
	if b, err := os.ReadFile(left); err != nil || string(b) != `{"key":` {
		t.Fatalf("the dead resolve's temp: %q, %v; want it left as it was", b, err)
	}
	if len(temps) != 2 || temps[0] == temps[1] {
		t.Fatalf("ticket temps %q: want two names", temps)
	}
}
