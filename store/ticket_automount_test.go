package store

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"sessdb/internal/fsat"
)

// A ticket's job_dir is looked at without a lookup in an automounted dir:
// a ticket copied from another host naming /net/<host>/jobs/8 had the
// automounter mount that host (a promote that hangs where it does not
// answer). A job_dir through such a dir (here one the test marks,
// fsat.TestHookAutomountDir) is refused unlooked: whether it names
// another directory is not known, as where it cannot be looked up, and
// under an automounted /home a copy taken for a moved job dir would be
// promoted as the job's. One outside it is still looked at and refused.
func TestATicketsJobDirIsNotLookedUpInAnAutomountedDir(t *testing.T) {
	base := t.TempDir()
	for _, d := range []string{"job", "net/host/jobs/8", "other"} {
		if err := os.MkdirAll(filepath.Join(base, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	var want unix.Stat_t
	if err := unix.Stat(filepath.Join(base, "net"), &want); err != nil {
		t.Fatal(err)
	}
	fsat.TestHookAutomountDir = func(fd int) bool {
		var st unix.Stat_t
		return unix.Fstat(fd, &st) == nil && st.Dev == want.Dev && st.Ino == want.Ino
	}
	t.Cleanup(func() { fsat.TestHookAutomountDir = nil })
	seed := strings.TrimSpace(strings.ReplaceAll(string(ticketSeeds()[1]), ticketRootMark, "/r"))
	job := filepath.Join(base, "job")
	for _, c := range []struct {
		named, words string
	}{
		{filepath.Join(base, "net/host/jobs/8"), "job_dir goes through an automounted directory"},
		{filepath.Join(base, "other"), "job_dir names another directory"},
	} {
		b := strings.Replace(seed, `"job_dir":"/run/jobs/8"`, `"job_dir":"`+c.named+`"`, 1)
		if err := os.WriteFile(filepath.Join(job, TicketName), []byte(b), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadTicket(job); !errors.Is(err, ErrBadTicket) || !strings.Contains(err.Error(), c.words) {
			t.Errorf("job_dir %s: %v; want not a valid ticket, %q", c.named, err, c.words)
		}
	}
}
